// SPDX-License-Identifier: Apache-2.0
#include "core/confinement_plan.h"

namespace mlos {

ConfinementPlan plan_confinement(const CpuSet& node, const CpuSet& exclusive) {
  ConfinementPlan p;
  const CpuSet held = exclusive & node;
  if (held.empty()) {
    p.reason = "no exclusive job confines other processes";
    return p;
  }
  p.pool = node.minus(held);
  if (p.pool.empty()) {
    p.reason = "every CPU (" + node.to_list() +
               ") is held exclusively: nothing is confined, so the system keeps CPUs to run on";
    return p;
  }
  p.active = true;
  return p;
}

}  // namespace mlos
