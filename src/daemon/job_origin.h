/* SPDX-License-Identifier: Apache-2.0 */
// Where a job's owner comes from (its cgroup when it asks), and what that
// means for the job: the CPUs it may be placed on, and whether it stays in
// a cgroup another manager owns (a Kubernetes pod, a Slurm step) instead
// of getting one of mlosd's. See docs/cluster.md.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cpu_set.h"

namespace mlos::daemon {

struct JobOrigin {
  std::string cgroup;           // as /proc/<pid>/cgroup names it; "" unknown
  std::optional<CpuSet> cpus;   // its effective cpuset; nullopt: no bound
  bool stays = false;           // in (or below) one of stay_in_cgroups
};

// Whether cgroup `path` ("/a/b") is `prefix` ("a", a relative path) or lies
// below it, component by component ("/ab" is not below "a").
bool cgroup_within(const std::string& path, const std::string& prefix);

// The origin of an owner in `cgroup`: cgroups under mlosd's `base` are its
// own (no bound, never stays); others are bounded by `cpus_of` and stay
// when within one of `stay_in`.
JobOrigin job_origin(const std::optional<std::string>& cgroup, const std::string& base,
                     const std::vector<std::string>& stay_in,
                     const std::function<std::optional<CpuSet>(const std::string&)>& cpus_of);

}  // namespace mlos::daemon
