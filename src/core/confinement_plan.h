/* SPDX-License-Identifier: Apache-2.0 */
// Where the node's other processes may run while exclusive jobs hold CPUs:
// the kubelet's static CPU manager and Slurm take exclusive CPUs out of the
// pool every other process uses; mlosd does the same (daemon/confinement.h).
// Pure logic.
#pragma once

#include <string>

#include "core/cpu_set.h"

namespace mlos {

struct ConfinementPlan {
  bool active = false;  // other processes are kept on `pool`
  CpuSet pool;          // where they may run (when active)
  std::string reason;   // why not active ("" when active)
};

// `node`: every CPU of the machine's root cpuset; `exclusive`: the CPUs of
// exclusive jobs that confine others. Active only while at least one CPU
// stays outside them: a node whose every CPU is exclusive confines nothing,
// so the system is never starved.
ConfinementPlan plan_confinement(const CpuSet& node, const CpuSet& exclusive);

}  // namespace mlos
