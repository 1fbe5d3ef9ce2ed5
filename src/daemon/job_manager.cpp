// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_manager.h"

#include <algorithm>
#include <set>

#include "core/memory_pressure_json.h"
#include "core/phase_policy.h"
#include "daemon/event_log.h"
#include "daemon/job_status.h"
#include "os/log_sink.h"

namespace mlos::daemon {

using nlohmann::json;

JobManager::JobManager(JobManagerDeps deps)
    : d_(std::move(deps)),
      cgroup_version_(d_.cgroups ? d_.cgroups->version() : "none"),
      book_(d_.allowed.count(), static_cast<int>(d_.topology.gpus.size())),
      store_(d_.state, d_.now_ns),
      cgroups_(d_.cgroups, d_.topology, d_.policy, book_, jobs_),
      memory_(d_.cgroups, d_.node_memory, d_.now_ns, d_.memory_thresholds) {
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

void JobManager::follow_phase(Live& j) {
  if (auto snap = phase_snapshot(j, d_.now_ns())) {
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
  if (Live* top = cgroup_holder(j)) cgroups_.refresh(*top);
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

void JobManager::reconfigure(Reconfigurable settings) {
  d_.quotas = std::move(settings.quotas);
  memory_.set_defaults(settings.memory_thresholds);
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
  if (it->second.memory) memory_.forgot_watched_job();  // its wake-ups close with it
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
      cgroups_.apply(h->second, false);  // narrowed again
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
    cgroups_.apply(next, true);
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
      cgroups_.apply(child, true);
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

Result<json> JobManager::watch_memory(const os::PeerCredentials& peer, const json& args, os::UniqueFd doorbell) {
  auto asked = JobMemoryWatches::parse(args);
  if (!asked) return asked.error();
  if (!doorbell.valid()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "watch_memory needs an eventfd passed with it");
  auto j = owned_job(peer, asked->job);
  if (!j) return j.error();
  if (Status s = start_memory_watch(**j, std::move(doorbell), asked->owner_fd, asked->thresholds); !s) return s.error();
  if (Status s = persist(**j); !s) return s.error();
  return json{{"report", report_to_json((*j)->memory->report())},
              {"thresholds", thresholds_to_json((*j)->memory->thresholds())}};
}

Status JobManager::start_memory_watch(Live& j, os::UniqueFd doorbell, int owner_fd, const json& thresholds) {
  auto level = memory_.start(j, std::move(doorbell), owner_fd, thresholds);
  if (!level) return level.error();
  tell_pressure(j, *level);
  return Status::Ok();
}

void JobManager::tell_pressure(const Live& j, std::optional<int> level) {
  if (level && policies_) policies_->pressure_changed(j.record.id, *level);
}

Result<json> JobManager::memory_status(const os::PeerCredentials& peer, uint64_t job) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!(*j)->memory) return json{{"watching", false}};
  return json{{"watching", true}, {"report", report_to_json((*j)->memory->report())}};
}

void JobManager::memory_woke(uint64_t job, int fd) {
  auto it = jobs_.find(job);
  if (it != jobs_.end()) tell_pressure(it->second, memory_.woke(it->second, fd));
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
        if (!node) node = memory_.node_figures();
        tell_pressure(j, memory_.follow(j, *node));
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
  // Only a job with a cgroup of its own has a usage to read (a guest or a
  // nested job shares its host's or envelope's); read once a turn.
  std::optional<os::CgroupUsage> usage;
  if (d_.cgroups && j.record.parent == 0 && j.record.host == 0 && j.weight != 0) {
    auto [read, fresh] = turn_.usage.try_emplace(j.record.cgroup());
    if (fresh) {
      if (auto u = d_.cgroups->usage(j.record.cgroup())) read->second = *u;
    }
    usage = read->second;
  }
  return sample_job(j, d_.now_ns(), usage);
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
    const std::vector<std::string> policies = policies_ ? policies_->policies_of(id) : std::vector<std::string>{};
    json job = job_status_json(j, sample(j), cgroups_.cgroup_of(j), policies, advice_json(j));
    const size_t bytes = job.dump(-1, ' ', false, json::error_handler_t::replace).size();
    if (!jobs.empty() && page_bytes + bytes > kStatusPageBytes) break;
    page_bytes += bytes;
    jobs.push_back(std::move(job));
  }
  const bool more = it != jobs_.end();
  return json{{"cpus", d_.allowed.to_list()},
              {"gpus", gpus_status_json(d_.topology, book_.node_usage().gpus)},
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
