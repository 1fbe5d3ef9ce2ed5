// SPDX-License-Identifier: Apache-2.0
#include "class_plan.h"

#include <cstdio>

namespace mlos::autopolicy {

ClassPlan plan_for(WorkloadClass c, const FeatureVector& x) {
  ClassPlan p;
  switch (c) {
    case WorkloadClass::kInputBound:
      // The job waits on its input: read ahead of it (prefetch.md).
      p.policies.emplace_back("prefetch", "{}");
      break;
    case WorkloadClass::kComputeBound:
      // Its threads are the work: size them to the CPUs it gets, and ask
      // for CPUs of its own when other work takes a share of them.
      p.policies.emplace_back("thread-governor", "{}");
      if (x[kOthersCpuUse] >= kContendedCpuShare) {
        char why[128];
        std::snprintf(why, sizeof why, "compute-bound, and other work took %.0f%% of its CPUs",
                      100 * x[kOthersCpuUse]);
        p.placement = MLOS_POLICY_PLACEMENT_EXCLUSIVE;
        p.placement_reason = why;
      }
      break;
    case WorkloadClass::kMemoryBound:
      p.protect_memory = true;
      break;
    case WorkloadClass::kCommunicationBound:
      p.placement = MLOS_POLICY_PLACEMENT_EXCLUSIVE;
      p.placement_reason = "communication-bound: a rank preempted in a collective stalls every rank";
      break;
    case WorkloadClass::kLatencyInference:
      p.placement = MLOS_POLICY_PLACEMENT_EXCLUSIVE;
      p.placement_reason = "latency-sensitive: a request waits while other work runs on its CPU";
      break;
  }
  return p;
}

}  // namespace mlos::autopolicy
