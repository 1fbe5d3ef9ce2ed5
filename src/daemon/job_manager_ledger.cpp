// SPDX-License-Identifier: Apache-2.0
// JobManager::follow_ledger: the embedded ledger's claims in mlosd's book
// (why and how each is booked: daemon/ledger_adoption.h).
#include <algorithm>

#include "daemon/job_manager.h"
#include "daemon/ledger_adoption.h"
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
  Live* in = enclosing_job(c.owner);
  ClaimAdoption adopted = adoption_of(c, book_.take_id(), d_.allowed, in != nullptr ? &in->record : nullptr, book_,
                                      [this](const JobRecord& r) { return confines(r); });
  Live j{std::move(adopted.record), std::nullopt, PhaseProfile(d_.now_ns())};
  j.notes = std::move(adopted.notes);
  const uint64_t id = j.record.id;
  const JobRecord& r = jobs_.emplace(id, std::move(j)).first->second.record;
  book_.add(r);
  if (Status s = persist(jobs_.at(id)); !s) {
    report.push_back("could not record adopted job " + std::to_string(id) + ": " + s.error().describe());
    forget(id, "state file not saved");
    return;
  }
  report.push_back("adopted ledger claim " + std::to_string(c.id) + " (" + r.label + ") as job " + std::to_string(id) +
                   ": pid " + std::to_string(c.owner.pid) + ", CPUs " + r.cpus.to_list() +
                   (r.exclusive ? ", exclusive" : ""));
}

}  // namespace mlos::daemon
