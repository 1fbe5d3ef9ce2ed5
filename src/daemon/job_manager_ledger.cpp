// SPDX-License-Identifier: Apache-2.0
// JobManager::follow_ledger: the embedded ledger's claims in mlosd's book.
//
// Why adopt rather than refuse: a claim in the ledger belongs to a process
// that is already running on its CPUs (it was granted while mlosd was down,
// or by a process told MLOS_MODE=embedded). Refusing it would not move that
// process; it would only make mlosd blind to it and grant its "exclusive"
// CPUs a second time. Adopting books its CPUs, shows it in `mlos status`,
// and ends with it.
#include <algorithm>

#include "daemon/job_manager.h"
#include "os/log_sink.h"

namespace mlos::daemon {

std::vector<std::string> JobManager::follow_ledger() {
  std::vector<std::string> report;
  if (!d_.ledger_changes) return report;
  auto changed = d_.ledger_changes();
  if (!changed) return report;
  if (!*changed) {
    // Kept as it was: a ledger that cannot be read says nothing about
    // which claims ended.
    report.push_back("embedded ledger not followed this time: " + changed->error().describe());
    log_message(MLOS_LOG_WARN, report.back());
    return report;
  }
  ClaimLedger& ledger = **changed;
  std::set<uint64_t> present;
  for (const Claim& c : ledger.claims) present.insert(c.id);

  // Claims that left the ledger (released, or their owner died).
  std::vector<uint64_t> gone;
  for (const auto& [claim, job] : book_.adopted()) {
    if (!present.count(claim)) gone.push_back(job);
  }
  for (uint64_t id : gone) {
    report.push_back("forgot job " + std::to_string(id) + ": its claim left the embedded ledger");
    forget(id, "ledger claim released");
  }
  if (!gone.empty()) (void)persist_removal(gone);

  // Envelopes first, so that the claims made inside them nest.
  std::vector<const Claim*> fresh;
  for (const Claim& c : ledger.claims) {
    // A claim whose owner has exited is the ledger's to prune: adopting it
    // would book its CPUs and GPUs until the next owner sweep.
    if (!book_.adopted().count(c.id) && (!d_.is_alive || d_.is_alive(c.owner))) fresh.push_back(&c);
  }
  std::stable_sort(fresh.begin(), fresh.end(), [](const Claim* a, const Claim* b) { return a->envelope > b->envelope; });
  for (const Claim* c : fresh) {
    if (book_.ids_exhausted()) break;
    adopt_claim(*c, report);
  }
  for (const auto& line : report) log_message(MLOS_LOG_INFO, line);
  return report;
}

void JobManager::adopt_claim(const Claim& c, std::vector<std::string>& report) {
  Live j{JobRecord{}, std::nullopt, PhaseProfile(d_.now_ns())};
  JobRecord& r = j.record;
  r.id = book_.take_id();
  r.owner = c.owner;
  r.uid = c.uid;
  r.cpus = c.cpus & d_.allowed;
  if (r.cpus.empty()) r.cpus = c.cpus;  // outside mlosd's CPUs: booked as it is, noted below
  r.mems.set(c.numa_node);
  r.exclusive = c.exclusive;
  r.envelope = c.envelope;
  r.memory_bytes = c.memory_bytes;
  r.label = c.label.empty() ? "pid-" + std::to_string(c.owner.pid) : c.label;
  r.created_unix = c.created_unix;
  r.ledger_claim = c.id;
  r.gpus = c.gpus;
  r.gpus_exclusive = c.gpus_exclusive;
  Live* in = enclosing_job(c.owner);
  if (in != nullptr && (in->record.owner != c.owner || in->record.envelope)) r.parent = in->record.id;
  if (r.parent != 0) {
    // Its GPUs must be its envelope's to nest (a library from before
    // envelopes bounded GPUs may have claimed others): else the node's.
    const auto& outer = jobs_.at(r.parent).record.gpus;
    for (const auto& g : r.gpus) {
      if (std::find(outer.begin(), outer.end(), g) == outer.end()) {
        j.notes.push_back("not nested in job " + std::to_string(r.parent) + ": its GPU " + g +
                          " is not that job's, so it is booked as the node's");
        r.parent = 0;
        break;
      }
    }
  }
  const CpuUsage& u = r.parent != 0 ? book_.nested_usage(r.parent) : book_.node_usage();
  j.notes.push_back("adopted from the embedded ledger (claim " + std::to_string(c.id) +
                    "): booked by mlosd, not in a cgroup (its process placed itself)");
  if (r.parent != 0) j.notes.push_back("nested in job " + std::to_string(r.parent));
  if (r.exclusive && r.cpus.intersects(u.exclusive)) {
    // Two exclusive claims on one CPU cannot both be booked as such
    // (releasing one would free the other's CPU).
    r.exclusive = false;
    j.notes.push_back("booked as shared: CPUs " + (r.cpus & u.exclusive).to_list() +
                      " were already granted exclusively to another job");
  }
  if (r.parent == 0) {
    if (std::string note = book_.share_contended_gpus(r); !note.empty()) j.notes.push_back(note);
  }
  r.confines = confines(r);
  if (!(c.cpus & d_.allowed).count()) j.notes.push_back("its CPUs " + c.cpus.to_list() + " are outside mlosd's");
  auto [it, inserted] = jobs_.emplace(r.id, std::move(j));
  book_.add(it->second.record);
  if (Status s = persist(it->second); !s) {
    report.push_back("could not record adopted job " + std::to_string(r.id) + ": " + s.error().describe());
    forget(r.id, "state file not saved");
    return;
  }
  report.push_back("adopted ledger claim " + std::to_string(c.id) + " (" + it->second.record.label + ") as job " +
                   std::to_string(r.id) + ": pid " + std::to_string(c.owner.pid) + ", CPUs " +
                   it->second.record.cpus.to_list() + (it->second.record.exclusive ? ", exclusive" : ""));
}

}  // namespace mlos::daemon
