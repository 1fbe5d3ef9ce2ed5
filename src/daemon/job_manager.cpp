// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_manager.h"

#include <algorithm>
#include <set>

#include "core/json_fields.h"
#include "core/memory_pressure_json.h"
#include "core/phase_policy.h"
#include "daemon/cluster_ids.h"
#include "daemon/event_log.h"
#include "daemon/job_origin.h"
#include "os/log_sink.h"
#include "os/memory_sources.h"
#include "protocol/grant.h"

namespace mlos::daemon {

namespace {

using nlohmann::json;

CpuSet node_set(const std::vector<int>& nodes) {
  CpuSet s;
  for (int n : nodes) s.set(n);
  return s;
}

const char* phase_label(bool marked, mlos_training_phase_t phase) {
  return marked ? mlos_training_phase_name(phase) : "UNMARKED";
}

}  // namespace

JobManager::JobManager(JobManagerDeps deps)
    : d_(std::move(deps)),
      cgroup_version_(d_.cgroups ? d_.cgroups->version() : "none"),
      book_(d_.allowed.count(), static_cast<int>(d_.topology.gpus.size())),
      store_(d_.state, d_.now_ns) {
  if (d_.policy_hosts) policies_ = d_.policy_hosts(policy_callbacks());
}

JobManager::~JobManager() = default;

JobRegistry JobManager::registry() const {
  JobRegistry r;
  r.next_id = book_.next_id();
  for (const auto& [id, j] : jobs_) r.jobs.push_back(j.record);
  return r;
}

Status JobManager::persist(const Live& job) {
  return store_.put(job.record, book_.next_id(), [this] { return registry(); });
}

Status JobManager::persist_removal(const std::vector<uint64_t>& ids) {
  return store_.remove(ids, [this] { return registry(); });
}

Status JobManager::write_snapshot() { return store_.write_snapshot(registry()); }

Result<std::vector<std::string>> JobManager::recover() {
  std::vector<std::string> report;
  auto loaded = store_.load();
  if (!loaded) return loaded.error();
  JobRegistry registry;
  if (loaded->has_value()) {
    registry = std::move(**loaded);
  } else {
    report.push_back("no state file at " + store_.path() + ": starting with no jobs");
  }
  std::vector<std::string> cgroups;
  if (d_.cgroups) {
    auto listed = d_.cgroups->jobs();
    if (!listed) return listed.error();
    for (auto& name : *listed) {
      if (name.rfind("job-", 0) == 0) cgroups.push_back(name);
    }
  }
  ReconcilePlan plan = reconcile(registry, d_.is_alive, cgroups);
  book_.set_next_id(registry.next_id);
  for (const JobRecord& r : plan.prune) {
    report.push_back("pruned job " + std::to_string(r.id) + " (" + r.label + "): owner pid " +
                     std::to_string(r.owner.pid) + " is gone");
    if (d_.cgroups) {
      (void)d_.cgroups->detach(r.cgroup(), r.origin_cgroup);
      if (Status s = d_.cgroups->remove(r.cgroup()); !s) {
        report.push_back("could not remove " + r.cgroup() + ": " + s.error().describe());
      }
    }
  }
  std::set<int> owners_seen;
  for (const JobRecord& r : plan.adopt) {
    Live live{r, std::nullopt, PhaseProfile(d_.now_ns())};
    if (r.page_fd >= 0 && d_.fetch_fd) {
      auto fd = d_.fetch_fd(r.owner, r.page_fd);
      auto page = fd ? os::SharedPage::map_readonly(fd->get()) : Result<os::SharedPage>(fd.error());
      if (page) {
        live.page.emplace(std::move(*page));
      } else {
        live.notes.push_back("phase page: could not map it again after a restart (" + page.error().describe() +
                             "); phases only over the socket");
      }
    }
    jobs_.emplace(r.id, std::move(live));
    book_.add(r);
    Live& j = jobs_.at(r.id);
    follow_phase(j);
    apply_cgroup(j, true);
    if (r.memory_event_fd >= 0 && d_.fetch_fd) {
      auto fd = d_.fetch_fd(r.owner, r.memory_event_fd);
      Status s = fd ? start_memory_watch(j, std::move(*fd), r.memory_event_fd, r.memory_thresholds)
                    : Status(fd.error());
      if (!s) {
        j.record.memory_event_fd = -1;
        j.notes.push_back("memory watch: could not take the owner's eventfd again after a restart (" +
                          s.error().describe() + "); the owner re-registers on its next poll");
      }
    }
    // A cgroup that vanished while mlosd was down comes back empty: put the
    // owner back in, unless it belongs to another of its jobs' cgroups (one
    // cgroup per process; see request()).
    const bool existed = std::find(cgroups.begin(), cgroups.end(), r.cgroup()) != cgroups.end();
    const bool first_of_owner = owners_seen.insert(r.owner.pid).second;
    if (d_.cgroups && j.weight != 0 && !existed && first_of_owner) {
      (void)d_.move_process(r.cgroup(), r.owner, 0);
    }
    report.push_back("adopted job " + std::to_string(r.id) + " (" + r.label + "): pid " + std::to_string(r.owner.pid) +
                     ", CPUs " + r.cpus.to_list() + (j.page ? ", phase page mapped" : ""));
  }
  // Dependents whose parent or host was not adopted stand alone; hosts
  // cover the guests adopted after them.
  for (auto& [id, j] : jobs_) {
    const uint64_t other = j.record.parent != 0 ? j.record.parent : j.record.host;
    if (other == 0 || jobs_.count(other)) continue;
    if (j.record.parent != 0) {
      stand_alone(j, other);
    } else {
      std::string note;
      book_.change(j.record, [&](JobRecord& r) {
        r.host = 0;
        note = book_.share_contended_gpus(r);
      });
      if (!note.empty()) j.notes.push_back(note);
    }
    apply_cgroup(j, true);
    report.push_back("job " + std::to_string(id) + " stands alone: job " + std::to_string(other) + " is gone");
  }
  for (const auto& [host, guests] : book_.guests()) apply_cgroup(jobs_.at(host), false);
  for (const std::string& name : plan.stray_cgroups) {
    auto procs = d_.cgroups->processes(name);
    if (procs && procs->empty() && d_.cgroups->remove(name)) {
      report.push_back("removed stray empty cgroup " + name);
    } else {
      report.push_back("left stray cgroup " + name + ": it still has processes or cannot be read");
    }
  }
  // Claims made in the embedded ledger while mlosd was down.
  const std::vector<std::string> from_ledger = follow_ledger();
  report.insert(report.end(), from_ledger.begin(), from_ledger.end());
  // Policy hosts die with the daemon that started them: the adopted jobs
  // get theirs again (a policy that cannot come back is a note).
  for (auto& [id, j] : jobs_) {
    if (j.record.ledger_claim == 0) reattach_policies(j);
  }
  // What a previous mlosd confined (Confinement::load, by the caller),
  // reconciled with the jobs adopted: re-applied or undone.
  confine();
  // A fresh snapshot of what was adopted; the journal starts empty.
  if (!plan.prune.empty() || loaded->has_value()) {
    if (Status s = write_snapshot(); !s) return s.error();
  }
  return report;
}

std::optional<os::GpuDeviceRule> JobManager::gpu_device_rule(const Live& j) const {
  // The GPUs the cgroup's processes hold: the job's and its guests' (its
  // nested jobs take theirs from it).
  std::set<std::string> mine(j.record.gpus.begin(), j.record.gpus.end());
  for (uint64_t id : book_.guests_of(j.record.id)) {
    mine.insert(jobs_.at(id).record.gpus.begin(), jobs_.at(id).record.gpus.end());
  }
  // A job without GPU claims is left as it is (it never asked mlOS for
  // any); one with claims opens only those.
  if (mine.empty()) return std::nullopt;
  os::GpuDeviceRule rule;
  for (const auto& g : d_.topology.gpus) {
    if (g.uuid.empty()) continue;
    if (g.minor < 0) return std::nullopt;  // a GPU whose device file is unknown: no rule rather than a wrong one
    (mine.count(g.uuid) ? rule.allowed : rule.denied).push_back(g.minor);
  }
  return rule;
}

os::CgroupLimits JobManager::limits_for(const Live& j) const {
  os::CgroupLimits l;
  l.cpus = j.record.cpus;
  l.mems = j.record.mems;
  const Steering steer = steering(j);
  l.cpu_weight = steer.weight;
  // A host's cgroup holds its process for its guests too: their CPUs and
  // nodes, and their memory (no limit if any of them has none).
  uint64_t memory = j.record.memory_bytes;
  for (uint64_t id : book_.guests_of(j.record.id)) {
    const JobRecord& guest = jobs_.at(id).record;
    l.cpus = l.cpus | guest.cpus;
    l.mems = l.mems | guest.mems;
    memory = memory == 0 || guest.memory_bytes == 0 ? 0 : memory + guest.memory_bytes;
  }
  if (memory > 0) {
    // The request is the hard limit; reclaim pressure starts at 90% of it,
    // so a job feels throttling before the OOM killer.
    l.memory_max = memory;
    l.memory_high = memory / 10 * 9;
    if (steer.checkpoint) l.memory_low = memory;
  }
  l.gpu_devices = gpu_device_rule(j);
  // A policy's memory settings stand for these, within the hard limit
  // (checked when the policy asked: apply_policy_action).
  if (j.effects.memory_high.value) l.memory_high = *j.effects.memory_high.value;
  if (j.effects.memory_low.value) l.memory_low = *j.effects.memory_low.value;
  return l;
}

void JobManager::apply_cgroup(Live& j, bool create) {
  // Nested jobs and guests live in another job's cgroup.
  if (!d_.cgroups || j.record.parent != 0 || j.record.host != 0) return;
  const std::string name = j.record.cgroup();
  auto note_once = [&j](const std::string& line) {
    if (std::find(j.notes.begin(), j.notes.end(), line) == j.notes.end()) j.notes.push_back(line);
  };
  if (j.record.stays_in_origin) {
    // No cgroup of mlosd's: weight stays 0, so nothing moves the owner and
    // no phase rewrites a weight.
    note_once("cgroup: stays in " + j.record.origin_cgroup +
              " (another manager's, stay_in_cgroups): no cgroup of mlosd's, no CPU weight or memory limits from "
              "mlosd; its CPUs are set through thread affinity");
    return;
  }
  if (create) {
    if (Status s = d_.cgroups->create(name); !s) {
      note_once("cgroup: could not create " + name + ": " + s.error().describe());
      return;
    }
  }
  const os::CgroupLimits limits = limits_for(j);
  std::vector<std::string> unsupported;
  if (Status s = d_.cgroups->apply(name, limits, &unsupported); !s) {
    note_once("cgroup: could not apply limits to " + name + ": " + s.error().describe());
    return;
  }
  for (const auto& u : unsupported) note_once("cgroup: " + u);
  j.weight = limits.cpu_weight;
  j.protected_memory = limits.memory_low.has_value();
}

std::optional<PhaseSnapshot> JobManager::phase_snapshot(const Live& j) const {
  if (j.page) {
    auto s = PhasePageReader(j.page->data()).read();
    if (s && s->set_phase_calls > 0) return s;
    return std::nullopt;
  }
  if (!j.marked) return std::nullopt;
  PhaseSnapshot s;
  s.phase = j.explicit_profile.current();
  s.phase_ns = j.explicit_profile.nanoseconds(d_.now_ns());
  s.entries = j.explicit_profile.entries();
  s.set_phase_calls = j.explicit_profile.calls();
  return s;
}

void JobManager::follow_phase(Live& j) {
  if (auto snap = phase_snapshot(j)) {
    const bool changed = !j.marked || j.phase != snap->phase;
    const mlos_training_phase_t old = j.phase;
    j.marked = true;
    j.phase = snap->phase;
    if (changed && policies_) policies_->phase_changed(j.record.id, old, j.phase);
    if (changed) {
      log_event(MLOS_LOG_DEBUG, "job " + std::to_string(j.record.id) + " entered " + PhasePolicy::name(j.phase),
                {{"MLOS_EVENT", "phase"}, {"JOB_ID", std::to_string(j.record.id)}, {"PHASE", PhasePolicy::name(j.phase)}});
    }
  }
  if (Live* top = cgroup_holder(j)) refresh_cgroup(*top);
}

JobManager::Live* JobManager::cgroup_holder(Live& j) {
  // A nested job has no cgroup of its own: its phase steers the cgroup of
  // the job it runs in (under `mlos run`, the command's job steers the
  // envelope's cgroup, which holds every thread of the command).
  Live* top = &j;
  for (int depth = 0; top->record.parent != 0 && depth < 64; ++depth) {
    auto it = jobs_.find(top->record.parent);
    if (it == jobs_.end()) return nullptr;
    top = &it->second;
  }
  return top;
}

JobManager::Steering JobManager::steering(const Live& j) const {
  // Its own phase, if it marked one, and its nested jobs' (recursively):
  // the cgroup gets the largest weight any of them asks for, and memory
  // protection while any of them checkpoints. FORWARD (normal) if none is
  // marked, so an unmarked job is never penalised.
  Steering st;
  bool any = false;
  std::vector<const Live*> todo{&j};
  for (size_t i = 0; i < todo.size() && i < 4096; ++i) {
    const Live& x = *todo[i];
    if (x.effects.cpu_weight.value) {
      // A policy (phase-weights by default) decides this job's weight; the
      // phase table below is the fallback when none does.
      st.weight = std::max(st.weight, *x.effects.cpu_weight.value);
      any = true;
    } else if (x.marked) {
      st.weight = std::max(st.weight, d_.policy.weight(x.phase, x.record.priority));
      any = true;
    }
    if (x.marked) st.checkpoint = st.checkpoint || x.phase == MLOS_TRAINING_PHASE_CHECKPOINT;
    for (uint64_t id : book_.nested_in(x.record.id)) todo.push_back(&jobs_.at(id));
  }
  if (!any) st.weight = d_.policy.weight(MLOS_TRAINING_PHASE_FORWARD, j.record.priority);
  return st;
}

void JobManager::refresh_cgroup(Live& j) {
  if (!d_.cgroups || j.weight == 0) return;
  const os::CgroupLimits want = limits_for(j);
  if (want.memory_low.has_value() != j.protected_memory) {
    apply_cgroup(j, false);
  } else if (want.cpu_weight != j.weight) {
    if (Status s = d_.cgroups->set_cpu_weight(j.record.cgroup(), want.cpu_weight); s) {
      j.weight = want.cpu_weight;
    } else {
      apply_cgroup(j, false);  // notes the failure if it persists
    }
  }
}

Result<json> JobManager::request(const os::PeerCredentials& peer, const json& args, os::UniqueFd page) {
  auto asked = protocol::decode_grant_request(args);
  if (!asked) return asked.error();
  protocol::GrantRequest& x = *asked;
  PlacementRequest* req = &x.placement;
  // The job belongs to the process that connected, and only while it is
  // still that process running as that user (see JobManagerDeps).
  auto owner = d_.peer_process(peer);
  if (!owner) return owner.error();
  if (book_.ids_exhausted()) {
    return make_error(MLOS_ERR_STATE_CORRUPT, "job ids are exhausted (next_id " + std::to_string(book_.next_id()) + ")");
  }
  // Where the process already is: inside a job's cgroup put there by
  // another process or by `mlos run` (nested: carved from that job, never
  // refused for CPUs the node lacks), or inside its own first job's (a
  // guest of it). Only a process in a job cgroup, or below an envelope's
  // owner, has either, so nothing else is searched.
  Live* envelope = enclosing_job(*owner);
  const bool nested =
      envelope != nullptr && (envelope->record.owner != *owner || envelope->record.envelope);
  Live* host = envelope != nullptr && !nested ? envelope : nullptr;
  // A nested job's CPUs, memory and GPUs are its envelope's, paid for
  // once: it counts only as a job here, and must fit inside the envelope.
  const int gpus_asked = std::max<int>(req->gpus.count, static_cast<int>(req->gpus.uuids.size()));
  const JobAsk ask = nested ? book_.ask(0, 0, 0)
                            : book_.ask(req->exclusive ? req->num_cpus : 0, req->memory_bytes,
                                        req->gpus.exclusive ? gpus_asked : 0);
  if (Status s = book_.check_quota(d_.quotas, peer.uid, ask); !s) return s.error();
  if (nested) {
    if (Status s = book_.fits_envelope_memory(envelope->record, req->memory_bytes); !s) return s.error();
  }
  // The requester's own CPUs bound it too (a rank's share of its
  // envelope, a taskset): it can only narrow itself. So does the cgroup it
  // is in, read from the kernel (a pod's or a Slurm step's cpuset): a job
  // is never placed outside it, whatever the client says.
  JobOrigin origin;
  if (!nested && host == nullptr && d_.cgroups && d_.cgroup_of) {
    origin = job_origin(d_.cgroup_of(owner->pid), d_.cgroup_base, d_.stay_in_cgroups, d_.cgroup_cpus);
  }
  CpuSet bound = x.allowed ? d_.allowed & *x.allowed : d_.allowed;
  if (origin.cpus) {
    bound = bound & *origin.cpus;
    if (bound.empty()) {
      return make_error(MLOS_ERR_INSUFFICIENT_CPUS, "the requester's cgroup " + origin.cgroup + " allows CPUs " +
                                                        origin.cpus->to_list() + ", none of which mlosd manages (" +
                                                        d_.allowed.to_list() + ")");
    }
  }
  if (req->gpus.wanted()) {
    // A nested job's GPUs are carved from its envelope's, as its CPUs are;
    // any job's are bounded by the GPUs its CUDA_VISIBLE_DEVICES shows.
    if (nested) req->gpus.within = envelope->record.gpus;
    bound_by_visible_devices(req->gpus, d_.topology,
                             x.cuda_visible_devices ? x.cuda_visible_devices->c_str() : nullptr);
  }
  auto placement = nested ? plan_placement(d_.topology, envelope->record.cpus & bound,
                                           book_.nested_usage(envelope->record.id), MemoryAvailability{}, *req)
                          : plan_placement(d_.topology, bound, book_.node_usage(), d_.memory(), *req);
  if (!placement) {
    if (!nested) return placement.error();
    return make_error(placement.error().code, "nested in job " + std::to_string(envelope->record.id) + " (CPUs " +
                                                  envelope->record.cpus.to_list() +
                                                  ", the process's envelope): " + placement.error().message);
  }
  if (x.dry_run) {
    protocol::GrantReply plan;
    plan.placement = *placement;
    plan.dry_run = true;
    if (nested) plan.nested_in = envelope->record.id;
    return protocol::encode_grant_reply(plan);
  }

  Live j{JobRecord{}, std::nullopt, PhaseProfile(d_.now_ns())};
  JobRecord& r = j.record;
  r.id = book_.take_id();
  r.owner = *owner;
  r.uid = peer.uid;
  r.cpus = placement->cpu_set;
  r.mems = node_set(placement->nodes);
  r.exclusive = req->exclusive;
  r.memory_bytes = req->memory_bytes;
  r.priority = x.priority;
  r.envelope = x.envelope;
  r.origin_cgroup = origin.cgroup;
  r.stays_in_origin = origin.stays;
  // Another manager owns its cgroup and keeps other processes off its
  // CPUs (the kubelet's static CPU manager, Slurm): mlosd does not.
  r.confines = !nested && !origin.stays && confines(r);
  r.label = x.label.empty() ? "pid-" + std::to_string(owner->pid) : x.label;
  r.created_unix = d_.now_unix();
  r.gpus = placement->gpus;
  r.gpus_exclusive = req->gpus.wanted() && req->gpus.exclusive;
  if (!r.gpus.empty()) r.gpu_share_file = x.gpu_share_file;
  if (!placement->gpu_note.empty()) j.notes.push_back(placement->gpu_note);
  if (page.valid()) {
    auto mapped = os::SharedPage::map_readonly(page.get());
    if (mapped && x.page_fd >= 0) {
      j.page.emplace(std::move(*mapped));
      r.page_fd = x.page_fd;
    } else {
      j.notes.push_back(std::string("phase page: not used (") +
                        (mapped ? "no page_fd number given" : mapped.error().describe()) +
                        "); phases only over the socket");
    }
  }
  if (nested) {
    r.parent = envelope->record.id;
    j.notes.push_back("nested in job " + std::to_string(r.parent) + ": carved from its CPUs, in its cgroup");
  } else if (host != nullptr && d_.cgroups) {
    // One process sits in one cgroup per hierarchy: the host's, widened.
    r.host = host->record.id;
    j.notes.push_back("cgroup: shares " + host->record.cgroup() +
                      " with this process's first job (one cgroup per process); its cpuset now covers both");
  }
  auto [it, inserted] = jobs_.emplace(r.id, std::move(j));
  Live& live = it->second;
  book_.add(live.record);
  if (live.record.host != 0) {
    apply_cgroup(*host, false);
  } else if (live.record.parent == 0) {
    apply_cgroup(live, true);
    if (d_.cgroups && live.weight != 0) {
      if (Status s = d_.move_process(live.record.cgroup(), live.record.owner, peer.uid); !s) {
        live.notes.push_back("cgroup: could not move pid " + std::to_string(live.record.owner.pid) +
                             " in: " + s.error().describe());
      }
    }
  }
  // A job nested in an envelope (`mlos run --policy ...`) gets the
  // envelope's policies too, with the envelope's config unless it asked
  // for that policy itself: the command's own requests are what the
  // policies advise (threads), not the envelope, which runs no code.
  live.record.policies = x.policies;
  if (nested) {
    for (const auto& [name, config] : envelope->record.policies.items()) {
      if (!live.record.policies.contains(name)) live.record.policies[name] = config;
    }
  }
  if (Status s = persist(live); !s) {
    forget(live.record.id, "state file not saved");
    return make_error(s.error().code, "job not granted: the state file could not be saved: " + s.error().describe());
  }
  // The policies it asked for are part of the grant: one that cannot be
  // attached takes the job back, so the caller gets all or nothing. Their
  // verdicts may come later (after_verdicts): the job holds its CPUs
  // meanwhile. The defaults are attached too; their failures are notes.
  const uint64_t id = live.record.id;
  if (!policies_ && !live.record.policies.empty()) {
    forget(id, "a policy could not be attached");
    (void)persist_removal({id});
    return make_error(MLOS_ERR_UNSUPPORTED, "job not granted: this mlosd runs without policy modules");
  }
  std::vector<VerdictAsk> asks;
  for (const auto& [name, config] : live.record.policies.items()) {
    asks.push_back([this, name = name, config = config, id](policy::PolicyHosts::Verdict v) {
      policies_->attach_async(name, id, config, std::move(v));
    });
  }
  for (VerdictAsk& ask : default_policy_asks(live)) asks.push_back(std::move(ask));
  return after_verdicts(asks, [this, id, plan = *placement](const std::optional<Error>& refused) -> Result<json> {
    return finish_grant(id, plan, refused);
  });
}

Result<json> JobManager::finish_grant(uint64_t id, const Placement& placement, const std::optional<Error>& refused) {
  auto it = jobs_.find(id);
  if (refused) {
    if (it != jobs_.end()) {
      forget(id, "a policy could not be attached");
      (void)persist_removal({id});
      confine();
    }
    return make_error(refused->code, "job not granted: " + refused->message);
  }
  if (it == jobs_.end()) {
    return make_error(MLOS_ERR_NO_SUCH_THREAD, "job " + std::to_string(id) + " ended before its policies were attached");
  }
  Live& live = it->second;
  confine();
  {
    LogFields fields = job_fields(live.record);
    fields.insert(fields.begin(), {"MLOS_EVENT", "granted"});
    fields.push_back({"EXCLUSIVE", live.record.exclusive ? "1" : "0"});
    fields.push_back({"CGROUP", cgroup_of(live)});
    log_event(MLOS_LOG_INFO,
              "granted job " + std::to_string(live.record.id) + " (" + live.record.label + ") CPUs " +
                  live.record.cpus.to_list() + " to pid " + std::to_string(live.record.owner.pid),
              fields);
  }
  protocol::GrantReply reply;
  reply.placement = placement;
  reply.placement.cpu_set = live.record.cpus;
  reply.placement.gpus = live.record.gpus;
  reply.job = live.record.id;
  reply.cgroup = cgroup_of(live);
  if (policies_) reply.policies = policies_->policies_of(live.record.id);
  reply.notes = live.notes;
  return protocol::encode_grant_reply(reply);
}

void JobManager::reconfigure(Reconfigurable settings) {
  d_.quotas = std::move(settings.quotas);
  d_.memory_thresholds = settings.memory_thresholds;
  d_.stay_in_cgroups = std::move(settings.stay_in_cgroups);
  d_.may_confine = std::move(settings.may_confine);
  d_.default_policies = std::move(settings.default_policies);
}

Result<JobManager::Live*> JobManager::owned_job(const os::PeerCredentials& peer, uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return make_error(MLOS_ERR_INVALID_HANDLE, "no job " + std::to_string(job));
  if (peer.uid != 0 && peer.uid != it->second.record.uid) {
    return make_error(MLOS_ERR_PERMISSION, "job " + std::to_string(job) + " belongs to uid " +
                                               std::to_string(it->second.record.uid) + "; uid " +
                                               std::to_string(peer.uid) + " may not change it");
  }
  return &it->second;
}

Status JobManager::release(const os::PeerCredentials& peer, uint64_t job) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  forget(job, "released");
  Status s = persist_removal({job});
  confine();
  return s;
}

Status JobManager::set_phase(const os::PeerCredentials& peer, uint64_t job, int phase) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!PhasePolicy::valid_phase(phase)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown phase " + std::to_string(phase));
  }
  if ((*j)->page) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "job " + std::to_string(job) + " reports phases through its phase page");
  }
  (*j)->explicit_profile.enter(static_cast<mlos_training_phase_t>(phase), d_.now_ns());
  (*j)->marked = true;
  follow_phase(**j);
  return Status::Ok();
}

Status JobManager::attach(const os::PeerCredentials& peer, uint64_t job, pid_t pid) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!d_.cgroups) return make_error(MLOS_ERR_UNSUPPORTED, "mlosd runs without cgroups (--cgroups none)");
  if (pid <= 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "pid must be > 0");
  // The caller must own the process it moves (root may move any):
  // move_process checks the uids of the very process it moves.
  auto target = d_.identify(pid);
  if (!target) return target.error();
  return d_.move_process((*j)->record.cgroup(), *target, peer.uid);
}

void JobManager::forget(uint64_t id, const std::string& why) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  {
    // The ends a job is meant to have are news; the others (a grant taken
    // back) are warnings.
    const bool normal = why == "released" || why == "owner gone" || why == "ledger claim released";
    LogFields fields = job_fields(it->second.record);
    fields.insert(fields.begin(), {"MLOS_EVENT", "ended"});
    fields.push_back({"REASON", why});
    log_event(normal ? MLOS_LOG_INFO : MLOS_LOG_WARN,
              "job " + std::to_string(id) + " (" + it->second.record.label + ") ended: " + why, fields);
  }
  if (it->second.memory) ++memory_wakeups_version_;  // its wake-ups close with it
  if (policies_) policies_->detach_job(id);
  const JobRecord gone = it->second.record;
  book_.remove(gone);
  watched_.erase(id);
  jobs_.erase(it);
  if (gone.parent != 0) {
    if (auto p = jobs_.find(gone.parent); p != jobs_.end() && !pruning_.count(gone.parent)) {
      follow_phase(p->second);  // steered by one job less
    }
  } else if (gone.host != 0) {
    if (auto h = jobs_.find(gone.host); h != jobs_.end() && !pruning_.count(gone.host)) {
      apply_cgroup(h->second, false);  // narrowed again
    }
  } else if (d_.cgroups && gone.parent == 0 && !gone.stays_in_origin) {
    // Processes left behind (the released owner, orphaned workers) go back
    // to the cgroup the owner came from before the job's cgroup goes.
    (void)d_.cgroups->detach(gone.cgroup(), gone.origin_cgroup);
    (void)d_.cgroups->remove(gone.cgroup());
  }
  rehome_dependents(gone);
}

void JobManager::stand_alone(Live& child, uint64_t gone) {
  auto confines_others = [this](const JobRecord& r) { return confines(r); };
  for (std::string& note : book_.stand_alone(child.record, gone, d_.quotas, confines_others)) {
    child.notes.push_back(std::move(note));
  }
}

void JobManager::forget_together(std::vector<uint64_t> ids, const std::string& why) {
  // Dependents first: a guest's host and a nested job's envelope were
  // granted before it (a lower id), so the highest ids go first and nobody
  // is re-homed onto a job about to go. Before this, an owner of 250 jobs
  // (one process: one host, 249 guests) took 4.3 s to forget with cgroups,
  // its host's cgroup recreated for each guest in turn.
  std::sort(ids.rbegin(), ids.rend());
  pruning_.insert(ids.begin(), ids.end());
  for (uint64_t id : ids) forget(id, why);
  pruning_.clear();
}

void JobManager::rehome_dependents(const JobRecord& gone) {
  std::vector<uint64_t> changed;
  // Guests: the first becomes the host of the others, and the process
  // moves into its cgroup.
  if (const auto& guests = book_.guests_of(gone.id); !guests.empty()) {
    const std::vector<uint64_t> ids(guests.begin(), guests.end());
    for (uint64_t id : ids) book_.remove(jobs_.at(id).record);
    Live& next = jobs_.at(ids.front());
    for (uint64_t id : ids) {
      jobs_.at(id).record.host = id == next.record.id ? 0 : next.record.id;
      book_.add(jobs_.at(id).record);
      changed.push_back(id);
    }
    apply_cgroup(next, true);
    next.record.origin_cgroup = gone.origin_cgroup;  // the same process: it came from there
    if (d_.cgroups && next.weight != 0) (void)d_.move_process(next.record.cgroup(), next.record.owner, 0);
  }
  // Nested jobs: their envelope is gone; they become jobs of the node, on
  // the CPUs they have, booked against their owners' quotas.
  if (const auto& nested = book_.nested_in(gone.id); !nested.empty()) {
    const std::vector<uint64_t> ids(nested.begin(), nested.end());
    for (uint64_t id : ids) {
      Live& child = jobs_.at(id);
      stand_alone(child, gone.id);
      apply_cgroup(child, true);
      // Started inside the envelope, which came from there.
      child.record.origin_cgroup = gone.origin_cgroup;
      if (d_.cgroups && child.weight != 0) (void)d_.move_process(child.record.cgroup(), child.record.owner, 0);
      changed.push_back(id);
    }
  }
  for (uint64_t id : changed) {
    store_.put_later(jobs_.at(id).record, book_.next_id());
  }
}

std::string JobManager::cgroup_of(const Live& j) const {
  if (!d_.cgroups) return "";
  if (j.record.parent != 0 || j.record.host != 0) {
    // Nested in a nested job (`mlos run` inside `mlos run`): the outermost's.
    auto it = jobs_.find(j.record.parent != 0 ? j.record.parent : j.record.host);
    return it != jobs_.end() ? cgroup_of(it->second) : "";
  }
  return j.weight != 0 ? j.record.cgroup() : "";
}

JobManager::Live* JobManager::enclosing_job(const ProcessId& who) {
  if (d_.job_of_process) {
    if (auto in = d_.job_of_process(who.pid); in) {
      if (auto it = jobs_.find(*in); it != jobs_.end()) return &it->second;
    }
  }
  // No job cgroup holds it (mlosd --cgroups none, or a move that failed):
  // an envelope of its own or of an ancestor still bounds it, the newest
  // (innermost) first.
  if (!book_.has_envelopes() || !d_.lineage) return nullptr;
  for (const ProcessId& p : d_.lineage(who.pid)) {
    if (auto id = book_.envelope_of(p)) return &jobs_.at(*id);
  }
  return nullptr;
}

Status JobManager::start_memory_watch(Live& j, os::UniqueFd doorbell, int owner_fd, const json& thresholds) {
  auto t = thresholds.is_null() ? Result<MemoryThresholds>(d_.memory_thresholds)
                                : thresholds_from_json(thresholds, d_.memory_thresholds);
  if (!t) return t.error();
  // The doorbell must be an eventfd, and the daemon must never block on it.
  if (Status s = os::check_eventfd(doorbell.get()); !s) return s;
  j.memory = std::make_unique<JobMemoryWatch>(std::move(doorbell), *t);
  j.memory->arm(d_.cgroups.get(), j.record.cgroup(), j.record.memory_bytes);
  const std::string note = "memory watch: " + j.memory->note();
  if (!j.memory->note().empty() && std::find(j.notes.begin(), j.notes.end(), note) == j.notes.end()) {
    j.notes.push_back(note);
  }
  j.record.memory_event_fd = owner_fd;
  j.record.memory_thresholds = thresholds;
  follow_memory(j, node_figures());
  ++memory_wakeups_version_;
  return Status::Ok();
}

Result<json> JobManager::watch_memory(const os::PeerCredentials& peer, const json& args, os::UniqueFd doorbell) {
  int owner_fd = -1;
  json thresholds;
  uint64_t id = 0;
  try {
    if (!args.is_object()) throw std::invalid_argument("arguments must be a JSON object");
    for (const auto& [key, value] : args.items()) {
      if (key != "op" && key != "id" && key != "job" && key != "event_fd" && key != "thresholds") {
        throw std::invalid_argument("unknown field '" + key + "'");
      }
    }
    id = non_negative_field(args, "job");
    owner_fd = optional_int_field(args, "event_fd", -1);
    if (owner_fd < 0) throw std::invalid_argument("event_fd must be the caller's number of the eventfd it passes");
    thresholds = args.value("thresholds", json());
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("watch_memory: ") + e.what());
  }
  if (!doorbell.valid()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "watch_memory needs an eventfd passed with it");
  auto j = owned_job(peer, id);
  if (!j) return j.error();
  if (Status s = start_memory_watch(**j, std::move(doorbell), owner_fd, thresholds); !s) return s.error();
  if (Status s = persist(**j); !s) return s.error();
  return json{{"report", report_to_json((*j)->memory->report())},
              {"thresholds", thresholds_to_json((*j)->memory->thresholds())}};
}

Result<json> JobManager::memory_status(const os::PeerCredentials& peer, uint64_t job) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!(*j)->memory) return json{{"watching", false}};
  return json{{"watching", true}, {"report", report_to_json((*j)->memory->report())}};
}

std::vector<JobManager::MemoryWakeup> JobManager::memory_wakeups() const {
  std::vector<MemoryWakeup> out;
  for (const auto& [id, j] : jobs_) {
    if (!j.memory) continue;
    // poll(2)'s POLLIN/POLLPRI have epoll's EPOLLIN/EPOLLPRI values.
    for (auto w : j.memory->wake_fds()) out.push_back({id, w.fd, static_cast<uint32_t>(w.events)});
  }
  return out;
}

void JobManager::memory_woke(uint64_t job, int fd) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || !it->second.memory) return;
  it->second.memory->on_ready(fd, d_.now_ns());
  follow_memory(it->second, node_figures());
}

std::optional<MemoryFigures> JobManager::node_figures() const {
  if (!d_.node_memory) return std::nullopt;
  return d_.node_memory();
}

void JobManager::follow_memory(Live& j, const std::optional<MemoryFigures>& node) {
  if (!j.memory) return;
  MemoryFigures f = node.value_or(MemoryFigures{});
  bool psi_known = node.has_value();
  if (d_.cgroups) {
    auto u = d_.cgroups->usage(j.record.cgroup());
    if (u && u->memory_working_set && j.record.memory_bytes > 0) {
      const uint64_t budget = j.record.memory_bytes, ws = *u->memory_working_set;
      f.consider(budget > ws ? budget - ws : 0, budget, MemorySource::kCgroup);
    }
    // The job's own stalls (v2) rather than the node's.
    if (u && u->memory_psi_some_avg10) {
      f.psi_some_avg10 = *u->memory_psi_some_avg10;
      f.psi_full_avg10 = u->memory_psi_full_avg10.value_or(0);
      psi_known = true;
    }
  }
  if (f.budget_bytes == 0 && !psi_known) return;  // nothing readable: keep the last report
  j.memory->observe(f, d_.now_ns());
  const int level = static_cast<int>(j.memory->report().level);
  if (level != j.pressure_level_seen && policies_) policies_->pressure_changed(j.record.id, level);
  j.pressure_level_seen = level;
}

std::vector<uint64_t> JobManager::tick(size_t sweep_budget) {
  turn_ = {};
  (void)follow_ledger();  // one stat(2) unless the ledger changed
  std::vector<uint64_t> pruned;
  // Owners with a pidfd are read from /proc only by the sweep: at most
  // `sweep_budget` of them per tick, going round from where the last tick
  // stopped, so a tick costs the same at 10 jobs and at 10,000.
  std::set<uint64_t> swept;
  for (auto it = jobs_.upper_bound(sweep_cursor_); swept.size() < std::min(sweep_budget, jobs_.size());) {
    if (it == jobs_.end()) it = jobs_.begin();
    swept.insert(it->first);
    sweep_cursor_ = it->first;
    ++it;
  }
  // The node's figures once per tick, only when some job is watched.
  std::optional<std::optional<MemoryFigures>> node;
  for (auto& [id, j] : jobs_) {
    if ((!watched_.count(id) || swept.count(id)) && !d_.is_alive(j.record.owner)) {
      pruned.push_back(id);
    } else {
      follow_phase(j);
      if (j.memory) {
        if (!node) node = node_figures();
        follow_memory(j, *node);
      }
    }
  }
  forget_together(pruned, "owner gone");
  if (!pruned.empty()) {
    (void)persist_removal(pruned);  // one entry for all of them
  } else if (store_.behind()) {
    store_.compact_if_due([this] { return registry(); });
  }
  confine();
  poll_policies();
  return pruned;
}

std::vector<uint64_t> JobManager::owner_exited(const std::vector<uint64_t>& jobs) {
  std::vector<uint64_t> pruned;
  for (uint64_t job : jobs) {
    if (jobs_.count(job)) pruned.push_back(job);
  }
  forget_together(pruned, "owner gone");
  if (!pruned.empty()) (void)persist_removal(pruned);  // one entry for all of them
  confine();
  return pruned;
}

bool JobManager::confines(const JobRecord& r) const {
  return r.exclusive && r.parent == 0 && d_.confinement && (r.uid == 0 || (d_.may_confine && d_.may_confine(r.uid)));
}

void JobManager::confine() {
  if (!d_.confinement) return;
  // Jobs' own processes are never confined: they run where their grant says.
  const auto is_owner = [this](pid_t pid) { return book_.owns_jobs(pid); };
  d_.confinement->update(d_.allowed, book_.confining(), is_owner);
  // New processes in the root cgroup, about once a second at the default
  // tick (confine() runs at every tick and after every change).
  if (d_.confinement->active() && ++confine_calls_ % 10 == 0) d_.confinement->sweep(is_owner);
}

void JobManager::set_owner_watched(uint64_t job, bool watched) {
  if (watched && jobs_.count(job)) {
    watched_.insert(job);
  } else {
    watched_.erase(job);
  }
}

std::optional<ProcessId> JobManager::owner_of(uint64_t job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.record.owner;
}

std::vector<std::pair<uint64_t, ProcessId>> JobManager::owners() const {
  std::vector<std::pair<uint64_t, ProcessId>> out;
  for (const auto& [id, j] : jobs_) out.emplace_back(id, j.record.owner);
  return out;
}

std::vector<JobSample> JobManager::samples() const {
  std::vector<JobSample> out;
  for (const auto& [id, j] : jobs_) out.push_back(sample(j));
  return out;
}

JobSample JobManager::sample(const Live& j) const {
  JobSample s;
  s.job_id = j.record.id;
  s.label = j.record.label;
  s.uid = j.record.uid;
  s.exclusive = j.record.exclusive;
  s.cpus = j.record.cpus.count();
  const ClusterIds ids = cluster_ids_of(j.record.origin_cgroup);
  s.pod_uid = ids.pod_uid;
  s.slurm_job_id = ids.slurm_job_id;
  s.phase = j.phase;
  s.gpus = j.record.gpus;
  s.gpus_exclusive = j.record.gpus_exclusive;
  s.gpu_share_file = j.record.gpu_share_file;
  s.owner = j.record.owner;
  if (auto snap = phase_snapshot(j)) {
    s.phase = snap->phase;
    s.activity = snap->activity;
    const uint64_t now = d_.now_ns();
    for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
      uint64_t ns = snap->phase_ns[p];
      // A page records completed visits; add the running one.
      if (j.page && p == snap->phase && now > snap->entered_ns) ns += now - snap->entered_ns;
      s.phase_seconds[p] = static_cast<double>(ns) / 1e9;
      s.phase_entries[p] = snap->entries[p];
    }
  } else if (j.page) {
    // No set_phase yet, but collectives and checkpoints are counted all
    // the same.
    if (auto raw = PhasePageReader(j.page->data()).read()) s.activity = raw->activity;
  }
  // Only a job with a cgroup of its own has a usage to read (a guest or a
  // nested job shares its host's or envelope's); read once a turn.
  if (d_.cgroups && j.record.parent == 0 && j.record.host == 0 && j.weight != 0) {
    auto [usage, fresh] = turn_.usage.try_emplace(j.record.cgroup());
    if (fresh) {
      if (auto read = d_.cgroups->usage(j.record.cgroup())) usage->second = *read;
    }
    if (const auto& u = usage->second) {
      if (u->cpu_usage_ns) s.cpu_seconds = static_cast<double>(*u->cpu_usage_ns) / 1e9;
      if (u->memory_stall_us) s.memory_stall_seconds = static_cast<double>(*u->memory_stall_us) / 1e6;
      s.memory_bytes = u->memory_bytes;
    }
  }
  if (j.record.memory_bytes > 0) s.memory_limit_bytes = j.record.memory_bytes;
  if (j.memory) {
    s.memory_pressure_level = static_cast<int>(j.memory->report().level);
    s.memory_pressure_changes = j.memory->report().sequence;
  }
  return s;
}

json JobManager::status(uint64_t after, size_t limit) const {
  json jobs = json::array();
  // One page of jobs, by id after the cursor: only these are sampled (their
  // cgroup files read), so a status costs the page, not the registry.
  // It also ends before the jobs' text passes kStatusPageBytes (what their
  // policies published can make a job several KiB), so that a page fits one
  // reply frame whatever the limit; a page holds at least one job.
  auto it = jobs_.upper_bound(after);
  size_t page_bytes = 0;
  for (; it != jobs_.end() && jobs.size() < limit; ++it) {
    const uint64_t id = it->first;
    const Live& j = it->second;
    const JobSample s = sample(j);
    json seconds = json::object(), entries = json::object();
    for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
      const char* name = mlos_training_phase_name(static_cast<mlos_training_phase_t>(p));
      seconds[name] = s.phase_seconds[p];
      entries[name] = s.phase_entries[p];
    }
    json job{{"job", id},
             {"label", j.record.label},
             {"pid", j.record.owner.pid},
             {"uid", j.record.uid},
             {"cpus", j.record.cpus.to_list()},
             {"mems", j.record.mems.to_list()},
             {"exclusive", j.record.exclusive},
             {"memory_bytes", j.record.memory_bytes},
             {"priority", j.record.priority},
             {"created_unix", j.record.created_unix},
             {"phase", phase_label(j.marked, s.phase)},
             {"phase_source", j.page ? "page" : "socket"},
             {"phase_seconds", seconds},
             {"phase_entries", entries},
             {"cgroup", cgroup_of(j)},
             {"nested_in", j.record.parent == 0 ? json(nullptr) : json(j.record.parent)},
             {"host", j.record.host == 0 ? json(nullptr) : json(j.record.host)},
             {"envelope", j.record.envelope},
             {"gpus", j.record.gpus},
             {"gpus_exclusive", j.record.gpus_exclusive},
             {"exclusive_scope", !j.record.exclusive ? json(nullptr) : json(j.record.confines ? "node" : "mlos")},
             {"source", j.record.ledger_claim != 0 ? "ledger" : "daemon"},
             {"cpu_weight", j.weight},
             {"policies", policies_ ? json(policies_->policies_of(id)) : json::array()},
             {"advice", advice_json(j)},
             {"policy_report", j.requests.empty() ? json(nullptr) : j.requests.report()},
             {"notes", j.notes}};
    if (j.memory) job["memory_pressure"] = report_to_json(j.memory->report());
    job["cpu_seconds"] = s.cpu_seconds ? json(*s.cpu_seconds) : json(nullptr);
    job["memory_used_bytes"] = s.memory_bytes ? json(*s.memory_bytes) : json(nullptr);
    job["memory_stall_seconds"] = s.memory_stall_seconds ? json(*s.memory_stall_seconds) : json(nullptr);
    const size_t bytes = job.dump(-1, ' ', false, json::error_handler_t::replace).size();
    if (!jobs.empty() && page_bytes + bytes > kStatusPageBytes) break;
    page_bytes += bytes;
    jobs.push_back(std::move(job));
  }
  const bool more = it != jobs_.end();
  // The GPUs jobs can claim and who holds them (docs/gpu.md).
  json gpus = json::array();
  for (const auto& g : d_.topology.gpus) {
    if (g.uuid.empty()) continue;
    gpus.push_back({{"uuid", g.uuid},
                    {"index", g.nvml_index},
                    {"name", g.name},
                    {"pci_bus_id", g.pci_busid},
                    {"numa_node", g.numa_node},
                    {"memory_total_bytes", g.memory_total},
                    {"exclusive", book_.node_usage().gpus.exclusive.count(g.uuid) > 0},
                    {"shared_claims", book_.node_usage().gpus.load(g.uuid)}});
  }
  return json{{"cpus", d_.allowed.to_list()},
              {"gpus", gpus},
              {"gpu_note", d_.topology.gpu_note},
              {"exclusive_cpus", book_.node_usage().exclusive.to_list()},
              {"shared_pool", d_.allowed.minus(book_.node_usage().exclusive).to_list()},
              {"cgroups", cgroup_version_},
              {"confinement", d_.confinement ? d_.confinement->status()
                                             : json{{"mode", "off"},
                                                    {"active", false},
                                                    {"reason", d_.cgroups ? "confinement is off"
                                                                          : "mlosd runs without cgroups: exclusive "
                                                                            "CPUs are exclusive among mlOS jobs only"}}},
              {"total_jobs", jobs_.size()},
              {"next_after", more ? json(std::prev(it)->first) : json(nullptr)},
              {"jobs", jobs}};
}

}  // namespace mlos::daemon
