// SPDX-License-Identifier: Apache-2.0
// JobManager::recover: a (re)started mlosd's book made to match reality.
// The registry on disk (JobStore) and the job cgroups present are
// reconciled (daemon/job_registry.h's pure plan): dead owners' jobs are
// pruned with their cgroups, live owners' adopted with their CPUs
// unchanged (cgroup, phase page, memory watch and policies taken up
// again), dependents left without their envelope or host stand alone,
// empty stray cgroups go, and the embedded ledger's claims are adopted.
#include <algorithm>
#include <set>

#include "daemon/job_manager.h"

namespace mlos::daemon {

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
  const ReconcilePlan plan = reconcile(registry, d_.is_alive, cgroups);
  book_.set_next_id(registry.next_id);
  for (const JobRecord& r : plan.prune) prune_at_start(r, report);
  std::set<int> owners_seen;
  for (const JobRecord& r : plan.adopt) {
    // A cgroup that vanished while mlosd was down comes back empty: the
    // owner goes back in, unless it belongs to another of its jobs'
    // cgroups (one cgroup per process; see request()).
    const bool existed = std::find(cgroups.begin(), cgroups.end(), r.cgroup()) != cgroups.end();
    const bool first_of_owner = owners_seen.insert(r.owner.pid).second;
    adopt_at_start(r, !existed && first_of_owner, report);
  }
  stand_alone_at_start(report);
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

void JobManager::prune_at_start(const JobRecord& r, std::vector<std::string>& report) {
  report.push_back("pruned job " + std::to_string(r.id) + " (" + r.label + "): owner pid " +
                   std::to_string(r.owner.pid) + " is gone");
  if (!d_.cgroups) return;
  (void)d_.cgroups->detach(r.cgroup(), r.origin_cgroup);
  if (Status s = d_.cgroups->remove(r.cgroup()); !s) {
    report.push_back("could not remove " + r.cgroup() + ": " + s.error().describe());
  }
}

void JobManager::adopt_at_start(const JobRecord& r, bool move_owner_in, std::vector<std::string>& report) {
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
  Live& j = jobs_.emplace(r.id, std::move(live)).first->second;
  book_.add(r);
  follow_phase(j);
  cgroups_.apply(j, true);
  if (r.memory_event_fd >= 0 && d_.fetch_fd) {
    auto fd = d_.fetch_fd(r.owner, r.memory_event_fd);
    Status s =
        fd ? start_memory_watch(j, std::move(*fd), r.memory_event_fd, r.memory_thresholds) : Status(fd.error());
    if (!s) {
      j.record.memory_event_fd = -1;
      j.notes.push_back("memory watch: could not take the owner's eventfd again after a restart (" +
                        s.error().describe() + "); the owner re-registers on its next poll");
    }
  }
  if (move_owner_in && d_.cgroups && j.weight != 0) (void)d_.move_process(r.cgroup(), r.owner, 0);
  report.push_back("adopted job " + std::to_string(r.id) + " (" + r.label + "): pid " + std::to_string(r.owner.pid) +
                   ", CPUs " + r.cpus.to_list() + (j.page ? ", phase page mapped" : ""));
}

void JobManager::stand_alone_at_start(std::vector<std::string>& report) {
  // Dependents whose envelope or host was not adopted stand alone; hosts
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
    cgroups_.apply(j, true);
    report.push_back("job " + std::to_string(id) + " stands alone: job " + std::to_string(other) + " is gone");
  }
  for (const auto& [host, guests] : book_.guests()) cgroups_.apply(jobs_.at(host), false);
}

}  // namespace mlos::daemon
