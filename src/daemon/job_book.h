/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's book of jobs: which ids are given, what each job holds and from
// whom (the node's pool, or the envelope it is nested in), which jobs
// depend on which (nested jobs, guests), where the envelopes are, and what
// each uid holds against its quotas. Pure: no system call, no clock, no
// cgroup; JobManager (daemon/job_manager.h) feeds it the records it grants
// and forgets, and asks it before it grants.
//
// Kept incrementally (add/remove per record), so that a request costs the
// same at 10 jobs and at 10,000. The records themselves stay with their
// owner (JobManager's live jobs): a record must be removed exactly as it
// was added, which change() makes hard to get wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/placement.h"
#include "core/status.h"
#include "daemon/job_registry.h"
#include "daemon/user_quotas.h"

namespace mlos::daemon {

class JobBook {
 public:
  // The node's size, which quotas' -1 defaults resolve against.
  JobBook(int node_cpus, int node_gpus) : node_cpus_(node_cpus), node_gpus_(node_gpus) {}

  // Ids: given in order, never reused, below JobRegistry::kMaxJobId.
  uint64_t next_id() const { return next_id_; }
  void set_next_id(uint64_t next) { next_id_ = next; }
  bool ids_exhausted() const { return next_id_ > JobRegistry::kMaxJobId; }
  uint64_t take_id() { return next_id_++; }

  // Books a record in, or out (as it was booked in). A nested job's CPUs,
  // memory and GPUs are its envelope's: it books against the envelope and
  // counts only as a job for its uid.
  void add(const JobRecord& r) { book(r, +1); }
  void remove(const JobRecord& r) { book(r, -1); }
  // Books `r` out, lets `edit` change it, books it in again.
  void change(JobRecord& r, const std::function<void(JobRecord&)>& edit);

  // What the node's jobs hold, and what the jobs nested in `envelope` hold
  // of its CPUs and GPUs (empty when none).
  const CpuUsage& node_usage() const { return usage_; }
  const CpuUsage& nested_usage(uint64_t envelope) const;
  // Jobs nested in `id`, and guests of `id` (empty when none); hosts_of
  // guests, for walking every host.
  const std::set<uint64_t>& nested_in(uint64_t id) const;
  const std::set<uint64_t>& guests_of(uint64_t id) const;
  const std::map<uint64_t, std::set<uint64_t>>& guests() const { return guests_; }
  // Ledger claims adopted as jobs: claim id -> job id.
  const std::map<uint64_t, uint64_t>& adopted() const { return adopted_; }
  // CPUs of the jobs that keep other processes off theirs.
  const CpuSet& confining() const { return confining_; }
  // Whether process `pid` owns any job.
  bool owns_jobs(int pid) const { return owner_pids_.count(pid) > 0; }
  // The newest envelope job owned by `owner` (pid and start time), if any.
  std::optional<uint64_t> envelope_of(const ProcessId& owner) const;
  bool has_envelopes() const { return !envelopes_.empty(); }

  // What each uid holds in jobs; one uid's (empty if none).
  const std::map<uint32_t, UserHoldings>& holdings() const { return holdings_; }
  UserHoldings holdings_of(uint32_t uid) const;
  // A job's ask against its uid's quotas, on this node.
  JobAsk ask(int exclusive_cpus, uint64_t memory_bytes, int exclusive_gpus) const {
    return JobAsk{exclusive_cpus, memory_bytes, exclusive_gpus, node_cpus_, node_gpus_};
  }
  Status check_quota(const UserQuotas& quotas, uint32_t uid, const JobAsk& ask) const {
    return check_job_quota(quotas, uid, holdings_of(uid), ask);
  }

  // Whether `memory_bytes` more fit `envelope`'s memory next to what its
  // nested jobs hold (INSUFFICIENT_MEMORY naming both if not). An envelope
  // that reserved no memory has none to carve: its nested jobs reserve
  // nothing while nested, and meet their owner's quota if it ends first.
  Status fits_envelope_memory(const JobRecord& envelope, uint64_t memory_bytes) const;

  // Before `r` (not booked) is booked at node level with GPUs held
  // exclusively: if another job of the node holds any of them, books them
  // as shared instead and returns the note saying so ("" if not): two
  // exclusive bookings of one GPU would free it when either ends.
  std::string share_contended_gpus(JobRecord& r) const;

  // Makes nested job `r`, whose envelope (job `gone`) ended, a job of the
  // node, booked against the node and its uid's quotas as a fresh grant
  // would be. On CPUs or GPUs other jobs use, or past a quota, it keeps
  // running: shared, or without its memory reserved; the notes say so.
  // `confines` says whether it may then confine others.
  std::vector<std::string> stand_alone(JobRecord& r, uint64_t gone, const UserQuotas& quotas,
                                       const std::function<bool(const JobRecord&)>& confines);

 private:
  void book(const JobRecord& r, int sign);

  int node_cpus_;
  int node_gpus_;
  uint64_t next_id_ = 1;
  CpuUsage usage_;
  std::map<uint64_t, CpuUsage> nested_usage_;         // envelope -> its nested jobs' usage
  std::map<uint64_t, uint64_t> carved_memory_;        // envelope -> its nested jobs' memory_bytes
  std::map<uint64_t, std::set<uint64_t>> children_;   // envelope -> nested jobs
  std::map<uint64_t, std::set<uint64_t>> guests_;     // host -> guest jobs
  std::map<std::pair<int, uint64_t>, uint64_t> envelopes_;  // (owner pid, job) -> owner start time
  std::map<uint64_t, uint64_t> adopted_;              // ledger claim id -> job
  CpuSet confining_;
  std::map<int, int> owner_pids_;                   // owner pid -> its jobs
  std::map<uint32_t, UserHoldings> holdings_;
};

}  // namespace mlos::daemon
