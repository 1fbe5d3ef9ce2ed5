// SPDX-License-Identifier: Apache-2.0
// The C API of the data loader (include/mlos/dataload.h): argument checks,
// the slots (a tensor pool of the job), the helper's client.
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/api_guard.h"
#include "api/handle_table.h"
#include "api/owned_handle.h"
#include "api/versioned_struct.h"
#include "dataload/batch_layout.h"
#include "dataload/loader_client.h"
#include "mlos/dataload.h"
#include "mlos/tmm.h"
#include "os/install_location.h"
#include "os/process_self.h"
#include "tmm/size_classes.h"

namespace mlos::api {
namespace {

constexpr uint32_t kKnownFlags = MLOS_DATALOAD_NO_SHUFFLE | MLOS_DATALOAD_DROP_LAST | MLOS_DATALOAD_STRICT |
                                 MLOS_DATALOAD_IN_ORDER | MLOS_DATALOAD_PREAD;
// The helper's read-ahead (samples read and not yet decoded), counted
// against the job's memory_bytes as the slots are: the first of these that
// fits.
constexpr uint64_t kReadAheadChoices[] = {uint64_t{64} << 20, uint64_t{16} << 20, uint64_t{4} << 20};
constexpr uint32_t kMaxWorkers = 256, kMaxSlots = 64;
constexpr size_t kMaxSource = 4096;
constexpr int kStartTimeoutMs = 120000;  // opening a large ImageFolder lists every file

// One loader: the helper's client first (destroyed first: the helper stops
// before its slots go), then the slots and their pool.
struct LoaderEntry {
  mlos_tmm_pool_t* pool = nullptr;
  std::vector<mlos_tmm_buffer_t> slots;
  std::unique_ptr<dataload::LoaderClient> client;
  dataload::BatchLayout layout;
  pid_t creator = 0;
  std::weak_ptr<Job> job;
  uint64_t read_ahead_reserved = 0;

  ~LoaderEntry() {
    client.reset();
    for (const auto& s : slots) mlos_tmm_release(pool, s.data);
    if (pool) mlos_tmm_pool_destroy(pool);
    if (auto j = job.lock()) j->return_pool_bytes(read_ahead_reserved);
  }
};

// Reserves the read-ahead against `job` (nullptr: no job, the largest).
Result<uint64_t> reserve_read_ahead(Job* job) {
  if (!job) return kReadAheadChoices[0];
  for (uint64_t bytes : kReadAheadChoices) {
    if (job->reserve_pool_bytes(bytes)) return bytes;
  }
  return make_error(MLOS_ERR_INSUFFICIENT_MEMORY,
                    "the job's memory_bytes leaves no room for the loader's read-ahead (at least 4 MiB) after its slots");
}

HandleTable<LoaderEntry, mlos_dataload_t, 0x646c /* "dl" */>& loaders() {
  static auto* table = new HandleTable<LoaderEntry, mlos_dataload_t, 0x646c>();
  return *table;
}

int fail(const Error& e) { return record_error(e); }

template <class F>
int on_loader(mlos_dataload_t* handle, F&& body) {
  return guarded([&]() -> int {
    auto entry = owned_by_this_process(loaders().find(handle), [](const LoaderEntry& e) { return e.creator; },
                                       HandleKind{"data loader", "stopped", "start its own"});
    if (!entry) return mlos_last_error();
    return body(*entry);
  });
}

Status check_options(const mlos_dataload_options_t& o) {
  if (!o.source || !*o.source) return make_error(MLOS_ERR_INVALID_ARGUMENT, "source must name a dataset");
  if (strnlen(o.source, kMaxSource + 1) > kMaxSource) return make_error(MLOS_ERR_INVALID_ARGUMENT, "source over 4096 bytes");
  if (o.flags & ~kKnownFlags) return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown flags");
  if (o.transform > MLOS_DATALOAD_VAL) return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown transform");
  const uint32_t world = o.world_size ? o.world_size : 1;
  if (o.rank >= world) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "rank " + std::to_string(o.rank) + " is not below world_size " +
                                                     std::to_string(world));
  }
  if (o.workers > kMaxWorkers) return make_error(MLOS_ERR_INVALID_ARGUMENT, "workers over 256");
  if (o.prefetch > kMaxSlots) return make_error(MLOS_ERR_INVALID_ARGUMENT, "prefetch over 64 batches");
  return Status::Ok();
}

std::vector<int> process_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace
}  // namespace mlos::api

using namespace mlos;       // NOLINT(google-build-using-namespace)
using namespace mlos::api;  // NOLINT(google-build-using-namespace)

extern "C" {

int mlos_dataload_start(mlos_training_resources_t* resources, const mlos_dataload_options_t* options,
                        mlos_dataload_t** loader) {
  return guarded([&]() -> int {
    if (!options || !loader) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "options and loader must not be NULL"));
    auto given = read_versioned(options);
    if (!given) return fail(given.error());
    const mlos_dataload_options_t o = *given;
    std::shared_ptr<Job> job;
    if (resources && !(job = find_job(resources))) return mlos_last_error();
    if (Status s = check_options(o); !s) return fail(s.error());
    auto layout = dataload::batch_layout(o.batch_size, o.image_size, o.layout);
    if (!layout) return fail(layout.error());
    auto helper = os::locate_install_part(InstallPart::kDataloadHelper, "MLOS_DATALOAD_HELPER");
    if (!helper) return fail(helper.error());

    const std::vector<int> cpus = job ? job->placement().cpus : process_cpus();
    const uint32_t workers = o.workers ? o.workers : static_cast<uint32_t>(std::max<size_t>(1, cpus.size()));
    const uint32_t slots = o.prefetch ? o.prefetch : std::clamp(2 * workers, 2u, 16u);

    auto entry = std::make_shared<LoaderEntry>();
    entry->creator = os::self_pid();
    entry->layout = *layout;
    mlos_tmm_pool_options_t po{};
    po.struct_size = sizeof po;
    // Each slot is a pool buffer of its size class, placed at its class's
    // alignment: room for exactly `slots` of them.
    const int cls = tmm::size_class(layout->slot_bytes);
    const uint64_t align = tmm::class_alignment(cls);
    po.capacity_bytes = (tmm::class_bytes(cls) + align - 1) / align * align * slots;
    po.numa_node = MLOS_TMM_NODE_AUTO;
    po.name = "dataload";
    if (int rc = mlos_tmm_pool_create(resources, &po, &entry->pool); rc != MLOS_OK) return rc;
    dataload::LoaderSlots loader_slots;
    for (uint32_t i = 0; i < slots; ++i) {
      mlos_tmm_buffer_t b{};
      if (int rc = mlos_tmm_acquire(entry->pool, layout->slot_bytes, &b); rc != MLOS_OK) return rc;
      entry->slots.push_back(b);
      loader_slots.addresses.push_back(static_cast<char*>(b.data));
      loader_slots.offsets.push_back(b.offset);
    }
    if (int rc = mlos_tmm_pool_fd(entry->pool, &loader_slots.arena_fd); rc != MLOS_OK) return rc;
    auto read_ahead = reserve_read_ahead(job.get());
    if (!read_ahead) return fail(read_ahead.error());
    entry->job = job;
    entry->read_ahead_reserved = job ? *read_ahead : 0;

    dataload::StartRequest request;
    request.source = o.source;
    request.batch_size = o.batch_size;
    request.image_size = o.image_size;
    request.transform = o.transform;
    request.layout = o.layout;
    request.seed = o.seed;
    request.rank = o.rank;
    request.world_size = o.world_size ? o.world_size : 1;
    request.flags = o.flags;
    request.workers = workers;
    request.cpus = cpus;
    request.read_ahead_bytes = *read_ahead;
    auto client = dataload::LoaderClient::start(*helper, std::move(request), std::move(loader_slots), *layout,
                                                kStartTimeoutMs);
    if (!client) return fail(client.error());
    entry->client = std::move(*client);
    *loader = loaders().add(std::move(entry));
    return MLOS_OK;
  });
}

int mlos_dataload_get_info(mlos_dataload_t* loader, mlos_dataload_info_t* info) {
  return on_loader(loader, [&](LoaderEntry& e) -> int {
    if (!info) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "info must not be NULL"));
    const dataload::Started& s = e.client->started();
    mlos_dataload_info_t out{};
    out.struct_size = sizeof out;
    out.classes = s.classes;
    out.samples = s.samples;
    out.samples_per_epoch = s.samples_per_epoch;
    out.batches_per_epoch = s.batches_per_epoch;
    out.sample_bytes = e.layout.sample_bytes;
    out.workers = s.workers;
    out.slots = static_cast<uint32_t>(e.slots.size());
    out.helper_pid = e.client->pid();
    return fill_versioned(info, out);
  });
}

int mlos_dataload_start_epoch(mlos_dataload_t* loader, uint64_t epoch) {
  return on_loader(loader, [&](LoaderEntry& e) -> int {
    if (Status s = e.client->start_epoch(epoch); !s) return fail(s.error());
    return MLOS_OK;
  });
}

int mlos_dataload_next(mlos_dataload_t* loader, mlos_dataload_batch_t* batch, int64_t timeout_ms) {
  return on_loader(loader, [&](LoaderEntry& e) -> int {
    if (!batch) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "batch must not be NULL"));
    auto next = e.client->next(timeout_ms);
    if (!next) return fail(next.error());
    if (!next->has_value()) return MLOS_DATALOAD_END;
    const dataload::LoadedBatch& b = **next;
    *batch = mlos_dataload_batch_t{b.images, b.labels, b.count, b.skipped, b.index, b.epoch, b.slot, 0};
    return MLOS_OK;
  });
}

int mlos_dataload_release_batch(mlos_dataload_t* loader, uint32_t slot) {
  return on_loader(loader, [&](LoaderEntry& e) -> int {
    if (Status s = e.client->release(slot); !s) return fail(s.error());
    return MLOS_OK;
  });
}

int mlos_dataload_get_errors(mlos_dataload_t* loader, char* buf, size_t len, size_t* needed) {
  return on_loader(loader, [&](LoaderEntry& e) -> int { return copy_text_out(e.client->errors(), buf, len, needed, "errors"); });
}

int mlos_dataload_get_stats(mlos_dataload_t* loader, mlos_dataload_stats_t* stats) {
  return on_loader(loader, [&](LoaderEntry& e) -> int {
    if (!stats) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "stats must not be NULL"));
    const dataload::Started& s = e.client->started();
    mlos_dataload_stats_t out{};
    out.struct_size = sizeof out;
    out.reader = s.reader;
    out.read_ahead_bytes = s.read_ahead_bytes;
    out.workers = s.workers;
    out.active_workers = e.client->batches() ? e.client->active_workers() : s.workers;
    out.batches = e.client->batches();
    out.wait_ns = e.client->wait_ns();
    return fill_versioned(stats, out);
  });
}

int mlos_dataload_get_notes(mlos_dataload_t* loader, char* buf, size_t len, size_t* needed) {
  return on_loader(loader, [&](LoaderEntry& e) -> int {
    return copy_text_out(e.client->started().notes, buf, len, needed, "notes");
  });
}

int mlos_dataload_stop(mlos_dataload_t* loader) {
  return on_loader(loader, [&](LoaderEntry&) -> int {
    loaders().take(loader);  // the entry (helper, slots, pool) goes with the last reference
    return MLOS_OK;
  });
}

}  // extern "C"
