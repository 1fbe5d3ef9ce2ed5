/* SPDX-License-Identifier: Apache-2.0 */
// What a job's policy modules advise it now (mlosd's "advice" reply, or the
// embedded engine's), and the reason policy calls fail on a broker that
// serves none. See docs/api.md, "Policy
// modules", and docs/protocol.md for the wire form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos {

struct FailedPolicy {
  std::string name;
  std::string why;
};

struct PolicyAdvice {
  int threads = 1;               // intra-op threads to use now (>= 1)
  bool threads_advised = false;  // false: `threads` is the grant's recommended count
  std::string threads_by;        // the policy that advised it ("" when none did)
  uint32_t cpu_weight = 0;       // the job cgroup's CPU weight (v2 scale); 0 unknown
  std::string cpu_weight_by;     // the policy that set it ("" when none did)
  std::vector<std::string> policies;   // the policies the job uses
  std::vector<FailedPolicy> failed;    // of which failed now
};

// The "advice" object of mlosd's reply. Strict about what it uses
// (threads an integer >= 1, threads_advised a bool, policies an array of
// strings); nullable fields may be null or absent. VERSION_MISMATCH names
// the field a daemon sent in a form this library does not understand.
Result<PolicyAdvice> advice_from_json(const nlohmann::json& advice);

// UNSUPPORTED: a broker made without a policy service (a test's).
Error no_policy_service();

}  // namespace mlos
