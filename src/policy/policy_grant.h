/* SPDX-License-Identifier: Apache-2.0 */
// One job's policy grant, the same in both engines (mlosd and the embedded
// engine): what its policies may set and what they did, checked against
// the job's grant, and taken back exactly when a policy detaches or fails.
// The engines differ only in what they can carry out (mlosd has a cgroup
// per job, the embedded engine none), which they describe in a GrantScope,
// and in how they carry out what a grant changed (PolicyGranted).
//
// Not thread-safe: the thread that runs PolicyHosts owns the grants.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "core/cpu_set.h"
#include "core/status.h"
#include "policy/job_policy_requests.h"
#include "policy/policy_effects.h"
#include "policy/policy_protocol.h"

namespace mlos::policy {

// The job as its engine lets policies act on it.
struct GrantScope {
  int cpus = 1;               // threads may be advised in 1..cpus
  uint32_t uid = 0;           // file advice acts with this uid's rights
  uint64_t memory_limit = 0;  // memory settings stay within it; 0: none (refused)
  // Not empty: the engine has no cgroups at all, and every cgroup setting
  // is refused with this reason before anything else is checked.
  std::string no_cgroups;
  // Not empty: why this job cannot take that setting now (checked after
  // the value is checked against the grant).
  std::string no_cpu_weight;
  std::string no_memory;      // memory.high and memory.low
  std::string no_memory_low;  // memory.low only (cgroup v1)
  std::string no_io_weight;
};

// What a granted action changed, for the engine to carry out.
enum class PolicyGranted {
  kNothingToCarryOut,  // advice or file advice: read or done already
  kCpuWeight,          // the job's cgroup weight
  kMemory,             // the job's cgroup memory settings
  kReport,             // what the job's report shows (JobPolicyRequests::shows)
  kQueued,             // a request or release of another policy, queued in `ops`
};

// What taking a policy's effects back changed.
struct PolicyTakenBack {
  bool effects = false;  // a setting went back to the engine's default
  bool memory = false;   // among them a memory setting
  bool report = false;   // the job's report changed
};

class PolicyGrant {
 public:
  // Action `a` of policy `by`, checked against `scope` and recorded. Errors:
  // PERMISSION outside the grant (thread count, memory over the limit, no
  // limit), INVALID_ARGUMENT (a weight outside 1..10000, a bad report),
  // UNSUPPORTED what the engine or the job cannot carry out.
  Result<PolicyGranted> grant(const std::string& by, const Action& a, const GrantScope& scope,
                              std::deque<JobPolicyOp>& ops);
  // Policy `by` detached or failed: its settings go, and what it attached
  // is queued for release.
  PolicyTakenBack take_back(const std::string& by, uint64_t job, std::deque<JobPolicyOp>& ops);
  // The threads to use: advised, or the grant's `recommended` (>= 1).
  int threads(int recommended) const;

  const PolicyEffects& effects() const { return effects_; }
  JobPolicyRequests& requests() { return requests_; }
  const JobPolicyRequests& requests() const { return requests_; }

 private:
  PolicyEffects effects_;
  JobPolicyRequests requests_;
};

// What an engine knows of a job for its policies' figures; what it does
// not know stays unset (-1 or 0 to policies, see mlos/policy.h).
struct JobFigureSources {
  uint64_t job = 0;
  uint64_t now_ns = 0;
  std::optional<mlos_training_phase_t> phase;  // unset: never marked (IDLE)
  double phase_seconds[MLOS_TRAINING_PHASE_COUNT] = {};
  uint64_t phase_entries[MLOS_TRAINING_PHASE_COUNT] = {};
  int priority = 0;
  CpuSet cpus;
  int primary_node = -1;
  int recommended_threads = 1;
  std::optional<double> cpu_seconds, owner_cpu_seconds, cpus_busy_seconds;
  std::optional<uint64_t> memory_bytes;
  uint64_t memory_limit_bytes = 0;
  std::optional<int> memory_pressure_level;
  std::optional<double> collective_seconds;
};
mlos_policy_job_figures_t job_figures(const JobFigureSources& in);

}  // namespace mlos::policy
