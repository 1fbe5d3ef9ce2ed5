// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_origin.h"

namespace mlos::daemon {

bool cgroup_within(const std::string& path, const std::string& prefix) {
  if (path.empty() || path.front() != '/' || prefix.empty()) return false;
  const std::string rel = path.substr(1);
  return rel == prefix || (rel.size() > prefix.size() && rel.compare(0, prefix.size(), prefix) == 0 &&
                           rel[prefix.size()] == '/');
}

JobOrigin job_origin(const std::optional<std::string>& cgroup, const std::string& base,
                     const std::vector<std::string>& stay_in,
                     const std::function<std::optional<CpuSet>(const std::string&)>& cpus_of) {
  JobOrigin o;
  if (!cgroup || cgroup->empty() || cgroup->front() != '/') return o;
  o.cgroup = *cgroup;
  if (cgroup_within(o.cgroup, base)) return o;
  if (cpus_of) o.cpus = cpus_of(o.cgroup);
  for (const std::string& p : stay_in) o.stays = o.stays || cgroup_within(o.cgroup, p);
  return o;
}

}  // namespace mlos::daemon
