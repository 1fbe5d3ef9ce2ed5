/* SPDX-License-Identifier: Apache-2.0 */
// Where a handle's collective group puts its threads: the job's CPUs and
// memory policy, read when the group is created.
#pragma once

#include <functional>

#include "api/api_guard.h"
#include "collectives/process_group.h"
#include "os/kernel.h"

namespace mlos::api {

inline std::function<collectives::GroupPlacement()> group_placement_of(const mlos_training_resources_t* resources) {
  return [resources] {
    collectives::GroupPlacement where;
    auto job = find_job(resources);
    if (!job) return where;
    auto snap = job->snapshot();
    if (!snap) return where;
    where.cpus = snap->placement.cpu_set;
    where.memory_policy = os::memory_policy_for(snap->placement.memory_policy, snap->placement.nodes);
    return where;
  };
}

}  // namespace mlos::api
