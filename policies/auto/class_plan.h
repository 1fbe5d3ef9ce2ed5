/* SPDX-License-Identifier: Apache-2.0 */
// What `auto` asks for a job of each class (docs/auto.md, "What each class
// gets"): policies to attach, a placement to recommend, memory protection.
// Pure: the policy turns a plan into host calls.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <mlos/policy.h>

#include "workload_classes.h"
#include "workload_features.h"

namespace mlos::autopolicy {

// Other work took at least this share of the job's CPUs: worth a CPU set of
// its own for a compute-bound job.
constexpr double kContendedCpuShare = 0.25;

struct ClassPlan {
  std::vector<std::pair<std::string, std::string>> policies;  // name, config (JSON text)
  std::optional<int> placement;                               // mlos_policy_placement_t
  std::string placement_reason;
  bool protect_memory = false;  // memory.low at what the job uses (within its limit)
};

ClassPlan plan_for(WorkloadClass c, const FeatureVector& x);

}  // namespace mlos::autopolicy
