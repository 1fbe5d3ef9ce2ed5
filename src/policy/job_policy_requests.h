/* SPDX-License-Identifier: Apache-2.0 */
// What a job's policies ask for beyond its resources (docs/policies.md,
// "Managing a job's policies" and "Job reports"): other policies attached
// or released for the job, a recommended placement, and published
// reports. Shared by the embedded engine and mlosd, which differ only in
// where the job's books live and whether reports go to a file.
//
// Requests and releases are not carried out inside PolicyHosts' apply
// callback (attaching from there would re-enter PolicyHosts): take() queues
// them, and the owner of the hosts runs the queue once poll() returns
// (run_job_policy_ops). A policy may release only what it attached; what it
// attached goes with it when it detaches or fails; a policy the job asked
// for itself is never touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "policy/policy_effects.h"
#include "policy/policy_protocol.h"

namespace mlos::policy {

class PolicyHosts;

// A policy's request (attach) or release of another policy for a job.
struct JobPolicyOp {
  uint64_t job = 0;
  std::string by, target;
  bool attach = true;
  nlohmann::json config;
};

// One job's books. Not thread-safe: the thread that runs PolicyHosts owns it.
class JobPolicyRequests {
 public:
  // Whether take() handles `kind` (request, release, placement, report).
  static bool handles(ActionKind kind);
  // Whether a successful take() of `kind` changed what report() shows now
  // (placement, report; requests change it when they are carried out).
  static bool shows(ActionKind kind);

  // Action `a` of policy `by` for this job. PERMISSION: attaching itself,
  // or releasing what it did not attach; INVALID_ARGUMENT: a config or
  // report that is not a JSON object, or a kind handles() refuses.
  Status take(const std::string& by, const Action& a, std::deque<JobPolicyOp>& ops);
  // `by` detached or failed: its placement and report go, and what it
  // attached is queued for release. True if report() changed.
  bool take_back(const std::string& by, uint64_t job, std::deque<JobPolicyOp>& ops);
  // The job's owner requested or released `name` itself: no policy may
  // release it from now on. True if report() changed.
  bool owner_took(const std::string& name);
  // Carries out one queued op on `hosts`. True if report() changed.
  bool carry_out(const JobPolicyOp& op, PolicyHosts& hosts);

  // {"reports": {policy: {...}}, "attached_by_policy": {target: policy},
  //  "request_errors": {target: why}, "placement": {"recommended":
  //  "exclusive"|"shared", "by", "reason"} (only if one was recommended)}.
  nlohmann::json report() const;
  bool empty() const;

 private:
  std::map<std::string, nlohmann::json> reports_;      // by policy
  PolicySetting<int> placement_;                       // mlos_policy_placement_t recommended
  std::string placement_reason_;
  std::map<std::string, std::string> attached_by_;     // policy -> the policy that attached it
  std::map<std::string, std::string> request_errors_;  // policy -> why attaching it failed
};

// Runs at most `budget` queued ops (an attach waits for the policy's
// verdict, and its reply may queue more: they are taken in turns). `find`
// gives a job's books (null: the job is gone, its ops are dropped);
// `changed` is called for a job whose report() changed.
void run_job_policy_ops(std::deque<JobPolicyOp>& ops, PolicyHosts& hosts,
                        const std::function<JobPolicyRequests*(uint64_t)>& find,
                        const std::function<void(uint64_t)>& changed, size_t budget = 64);

}  // namespace mlos::policy
