// SPDX-License-Identifier: Apache-2.0
// The C ABI of include/mlos/training.h. Every entry point validates its
// arguments, catches every exception, and maps errors to mlos_error_t here.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "api/api_guard.h"
#include "api/collective_groups.h"
#include "api/engine_select.h"
#include "api/handle_registry.h"
#include "api/last_error.h"
#include "api/profile_at_release.h"
#include "api/tuning_evidence_at_release.h"
#include "api/versioned_struct.h"
#include "core/phase_policy.h"
#include "engine/job.h"
#include "engine/rank_bound.h"
#include "mlos/training.h"
#include "os/kernel.h"
#include "os/process_self.h"
#include "os/thread_id.h"

using mlos::Error;
using mlos::make_error;
using mlos::record_error;

namespace {

using mlos::api::check_struct_size;
using mlos::api::fill_versioned;
using mlos::api::read_versioned;
using mlos::api::find_job;
using mlos::api::guarded;
using mlos::api::invalid_handle;
using mlos::api::raw_enum;

constexpr uint32_t kKnownRequestFlags =
    MLOS_REQUEST_STRICT_MEMBIND | MLOS_REQUEST_SINGLE_NODE | MLOS_REQUEST_SHARED_GPUS;

// A local rank that asks for more CPUs than its share (typically a program
// written for the whole allocation, now started once per rank) gets its
// share: the split was mlOS's doing, not the program's, so the request is
// capped rather than refused. Returns the note saying so, or "".
std::string cap_to_rank_share(const mlos::ProcessBound& bound, mlos::PlacementRequest& request) {
  if (!bound.split || request.num_cpus <= bound.cpus.count()) return "";
  const mlos::RankSplit& s = *bound.split;
  std::string note = "asked for " + std::to_string(request.num_cpus) + " CPUs, capped to " +
                     std::to_string(bound.cpus.count()) + ": local rank " + std::to_string(s.local_rank) + " of " +
                     std::to_string(s.local_world_size) + " has CPUs " + bound.cpus.to_list() + " of mlos run's " +
                     s.envelope.to_list() + " (MLOS_RANK_SPLIT=0 turns the split off)";
  request.num_cpus = bound.cpus.count();
  return note;
}

// The getters' shared prologue, guarded: the job of this process behind
// `resources`, then INVALID_ARGUMENT `refusal` unless `args_ok`, then the
// job's snapshot, handed to `body`.
template <class Body>
int with_snapshot(const mlos_training_resources_t* resources, bool args_ok, const char* refusal, Body&& body) {
  return guarded([&]() -> int {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (!args_ok) return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, refusal));
    auto snap = job->snapshot();
    if (!snap) return record_error(snap.error());
    return body(*snap);
  });
}

}  // namespace

extern "C" {

int mlos_training_request_resources_ex(const mlos_training_resource_request_t* request,
                                       const mlos_training_request_options_t* options,
                                       mlos_training_resources_t** resources) {
  return guarded([&] {
    if (resources != nullptr) *resources = nullptr;
    if (request == nullptr || resources == nullptr) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "request and resources must not be NULL"));
    }
    if (request->priority < MLOS_PRIORITY_MIN || request->priority > MLOS_PRIORITY_MAX) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "priority " + std::to_string(request->priority) +
                                                                    " is outside [" +
                                                                    std::to_string(MLOS_PRIORITY_MIN) + ", " +
                                                                    std::to_string(MLOS_PRIORITY_MAX) + "]"));
    }
    mlos::ClaimRequest cr;
    cr.placement.num_cpus = request->num_cpus;
    cr.placement.memory_bytes = request->memory_bytes;
    cr.placement.numa_preference = request->numa_node_preference;
    cr.placement.exclusive = request->exclusive_cpus;
    cr.priority = request->priority;
    if (options != nullptr) {
      // A first-version caller's struct ends before the GPU fields: they read as 0 / NULL.
      auto given = read_versioned(options);
      if (!given) return record_error(given.error());
      options = &*given;
      if (options->flags & ~kKnownRequestFlags) {
        return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown request option flags"));
      }
      cr.placement.strict_membind = options->flags & MLOS_REQUEST_STRICT_MEMBIND;
      cr.placement.single_node = options->flags & MLOS_REQUEST_SINGLE_NODE;
      if (options->label != nullptr) cr.label = options->label;
      cr.placement.gpus.exclusive = !(options->flags & MLOS_REQUEST_SHARED_GPUS);
      if (options->num_gpus < 0) {
        return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT,
                                       "num_gpus must be >= 0, got " + std::to_string(options->num_gpus)));
      }
      cr.placement.gpus.count = options->num_gpus;
      if (options->gpu_uuids != nullptr) cr.placement.gpus.uuids = mlos::split_comma_list(options->gpu_uuids);
    }
    // Before any engine exists: a local rank's share becomes the process's
    // affinity, which both engines take as its bound.
    auto bound = mlos::process_bound();
    if (!bound) return record_error(bound.error());
    const std::string capped = cap_to_rank_share(*bound, cr.placement);
    auto broker = mlos::select_broker();
    if (!broker) return record_error(broker.error());
    auto grant = (*broker)->acquire(cr);
    if (!grant) return record_error(grant.error());
    grant->affinity_note = capped;
    mlos::JobSpec spec{cr.placement, request->priority, cr.label};
    auto job = std::make_shared<mlos::Job>(spec, std::move(grant.value()), *broker, mlos::os::linux_kernel());
    *resources = mlos::HandleRegistry::instance().add(std::move(job));
    return static_cast<int>(MLOS_OK);
  });
}

int mlos_training_request_resources(const mlos_training_resource_request_t* request,
                                    mlos_training_resources_t** resources) {
  return mlos_training_request_resources_ex(request, nullptr, resources);
}

int mlos_training_release_resources(mlos_training_resources_t* resources) {
  return guarded([&] {
    if (resources == nullptr) return static_cast<int>(MLOS_OK);
    auto job = mlos::HandleRegistry::instance().take(resources);
    if (!job) return invalid_handle();
    // A forked child's copy of its parent's handle is only forgotten.
    if (job->creator_pid() != mlos::os::self_pid()) return static_cast<int>(MLOS_OK);
    mlos::api::report_profile_if_asked(*job, resources);
    mlos::api::record_step_time_if_asked(*job);
    mlos::CollectiveGroups::instance().drop(resources);
    return mlos::to_code(job->release());
  });
}

int mlos_training_bind_thread(mlos_training_resources_t* resources, pthread_t thread, int cpu_index) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    auto tid = mlos::os::thread_tid(thread);
    if (!tid) return record_error(tid.error());
    return mlos::to_code(job->bind_thread(*tid, pthread_equal(thread, pthread_self()) != 0, cpu_index));
  });
}

int mlos_training_set_phase(mlos_training_resources_t* resources, mlos_training_phase_t phase) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    const int raw = raw_enum(phase);
    if (!mlos::PhasePolicy::valid_phase(raw)) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown phase " + std::to_string(raw)));
    }
    return mlos::to_code(job->set_phase(static_cast<mlos_training_phase_t>(raw)));
  });
}

int mlos_training_register_memory_callback(mlos_training_resources_t* resources, mlos_memory_callback_t callback,
                                           void* user_data) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    return mlos::to_code(job->register_memory_callback(callback, user_data));
  });
}

int mlos_training_unregister_memory_callback(mlos_training_resources_t* resources, mlos_memory_callback_t callback,
                                             void* user_data) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    return mlos::to_code(job->unregister_memory_callback(callback, user_data));
  });
}

int mlos_training_set_memory_thresholds(mlos_training_resources_t* resources,
                                        const mlos_memory_thresholds_t* thresholds) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (!thresholds) return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "thresholds is NULL"));
    auto given = read_versioned(thresholds);
    if (!given) return record_error(given.error());
    thresholds = &*given;
    mlos::MemoryThresholds t;
    t.moderate_headroom = thresholds->moderate_headroom_percent / 100.0;
    t.critical_headroom = thresholds->critical_headroom_percent / 100.0;
    t.moderate_psi_some = thresholds->moderate_psi_some;
    t.critical_psi_full = thresholds->critical_psi_full;
    t.hysteresis = thresholds->hysteresis_percent / 100.0;
    t.hold_ms = thresholds->hold_ms;
    t.sample_ms = thresholds->sample_ms;
    return mlos::to_code(job->set_memory_thresholds(t));
  });
}

int mlos_training_get_memory_pressure(mlos_training_resources_t* resources, mlos_memory_pressure_info_t* info) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (!info) return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "info is NULL"));
    if (mlos::Status s = check_struct_size<mlos_memory_pressure_info_t>(info->struct_size); !s) {
      return record_error(s.error());
    }
    auto report = job->memory_pressure();
    if (!report) return record_error(report.error());
    mlos::fill_pressure_info(*report, info);
    return static_cast<int>(MLOS_OK);
  });
}

void* mlos_training_alloc_checkpoint_buffer(mlos_training_resources_t* resources, size_t size) {
  return mlos_training_alloc_checkpoint_buffer_ex(resources, size, 0, nullptr);
}

void* mlos_training_alloc_checkpoint_buffer_ex(mlos_training_resources_t* resources, size_t size, unsigned flags,
                                               bool* locked) {
  void* out = nullptr;
  guarded([&] {
    if ((flags & ~MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED) != 0) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown checkpoint buffer flags " +
                                                                    std::to_string(flags)));
    }
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    bool is_locked = true;
    auto p = job->alloc_checkpoint_buffer(size, (flags & MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED) != 0, &is_locked);
    if (!p) return record_error(p.error());
    out = *p;
    if (locked != nullptr) *locked = is_locked;
    return static_cast<int>(MLOS_OK);
  });
  return out;
}

int mlos_training_free_checkpoint_buffer(mlos_training_resources_t* resources, void* buffer) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    return mlos::to_code(job->free_checkpoint_buffer(buffer));
  });
}

int mlos_training_register_buffer(mlos_training_resources_t* resources, void* addr, size_t size,
                                  mlos_buffer_kind_t kind) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    const int raw_kind = raw_enum(kind);
    if (raw_kind != MLOS_BUFFER_GRADIENT) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown buffer kind " + std::to_string(raw_kind)));
    }
    return mlos::to_code(job->register_buffer(addr, size, static_cast<mlos_buffer_kind_t>(raw_kind)));
  });
}

int mlos_training_unregister_buffer(mlos_training_resources_t* resources, void* addr) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    return mlos::to_code(job->unregister_buffer(addr));
  });
}

int mlos_training_get_placement(const mlos_training_resources_t* resources, mlos_training_placement_t* placement) {
  return with_snapshot(resources, placement != nullptr, "placement is NULL", [&](const mlos::Job::Snapshot& snap) {
    mlos_training_placement_t p{};
    p.num_cpus = static_cast<int>(snap.placement.cpus.size());
    p.numa_node = snap.placement.primary_node;
    p.num_numa_nodes = static_cast<int>(snap.placement.nodes.size());
    p.exclusive = snap.exclusive;
    p.recommended_threads = std::max(1, snap.placement.physical_cores);
    p.memory_policy = snap.placement.memory_policy;
    p.memory_bytes = snap.memory_bytes;
    p.phase = snap.phase;
    p.degraded_effects = snap.degraded;
    p.claim_id = snap.claim_id;
    p.bound_threads = snap.bound_threads;
    return fill_versioned(placement, p);
  });
}

int mlos_training_get_cpus(const mlos_training_resources_t* resources, int* cpus, size_t capacity, size_t* count) {
  return with_snapshot(resources, count != nullptr && (cpus != nullptr || capacity == 0),
                       "count is NULL, or cpus is NULL with capacity > 0", [&](const mlos::Job::Snapshot& snap) {
    const auto& v = snap.placement.cpus;
    *count = v.size();
    if (capacity < v.size()) {
      return record_error(make_error(MLOS_ERR_BUFFER_TOO_SMALL, "need room for " + std::to_string(v.size()) + " CPUs"));
    }
    std::copy(v.begin(), v.end(), cpus);
    return static_cast<int>(MLOS_OK);
  });
}

int mlos_training_recommended_threads(const mlos_training_resources_t* resources) {
  return with_snapshot(resources, true, "", [](const mlos::Job::Snapshot& snap) {
    return std::max(1, snap.placement.physical_cores);
  });
}

int mlos_training_get_phase_profile(const mlos_training_resources_t* resources,
                                    mlos_training_phase_profile_t* profile) {
  return with_snapshot(resources, profile != nullptr, "profile is NULL", [&](const mlos::Job::Snapshot& snap) {
    mlos_training_phase_profile_t p{};
    p.current_phase = snap.phase;
    for (int i = 0; i < MLOS_TRAINING_PHASE_COUNT; ++i) {
      p.seconds[i] = static_cast<double>(snap.phase_ns[i]) / 1e9;
      p.entries[i] = snap.entries[i];
    }
    p.set_phase_calls = snap.set_phase_calls;
    p.os_updates = snap.os_updates;
    const auto comm = mlos::CollectiveGroups::instance().tally(resources);
    p.communication_seconds = static_cast<double>(comm.nanoseconds) / 1e9;
    p.collective_calls = comm.calls;
    p.collective_bytes = comm.bytes;
    return fill_versioned(profile, p);
  });
}

int mlos_training_get_notes(const mlos_training_resources_t* resources, char* buf, size_t len, size_t* needed) {
  return with_snapshot(resources, needed != nullptr && (buf != nullptr || len == 0),
                       "needed is NULL, or buf is NULL with len > 0", [&](const mlos::Job::Snapshot& snap) {
    return mlos::api::copy_text_out(snap.notes, buf, len, needed, "notes");
  });
}

int mlos_training_get_gpus(const mlos_training_resources_t* resources, char* buf, size_t len, size_t* needed) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (needed == nullptr || (buf == nullptr && len > 0)) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "needed is NULL, or buf is NULL with len > 0"));
    }
    return mlos::api::copy_text_out(mlos::join_comma_list(job->placement().gpus), buf, len, needed, "GPUs");
  });
}

const char* mlos_training_phase_name(mlos_training_phase_t phase) { return mlos::PhasePolicy::name(raw_enum(phase)); }

}  // extern "C"
