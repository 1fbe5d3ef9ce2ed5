// SPDX-License-Identifier: Apache-2.0
#include "daemon/cluster_ids.h"

#include <sstream>
#include <vector>

namespace mlos::daemon {

namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

bool is_uid_text(const std::string& s) {
  if (s.size() < 8 || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

ClusterIds cluster_ids_of(const std::string& cgroup) {
  ClusterIds ids;
  const std::vector<std::string> parts = components(cgroup);
  const bool kube = !parts.empty() && (parts[0] == "kubepods" || parts[0] == "kubepods.slice");
  const bool slurm = !parts.empty() && (parts[0] == "slurm" || (parts.size() > 1 && parts[0] == "system.slice" &&
                                                                 parts[1] == "slurmstepd.scope"));
  for (const std::string& p : parts) {
    if (kube && ids.pod_uid.empty()) {
      // cgroupfs: "pod<uid>"; systemd: "kubepods[-<qos>]-pod<uid with '_' for '-'>.slice".
      std::string candidate;
      if (starts_with(p, "pod")) {
        candidate = p.substr(3);
      } else if (const size_t at = p.rfind("-pod"); at != std::string::npos && p.size() > 6 &&
                                                      p.compare(p.size() - 6, 6, ".slice") == 0) {
        candidate = p.substr(at + 4, p.size() - 6 - (at + 4));
        for (char& c : candidate) c = c == '_' ? '-' : c;
      }
      if (is_uid_text(candidate)) ids.pod_uid = candidate;
    }
    if (slurm && ids.slurm_job_id.empty() && starts_with(p, "job_") && all_digits(p.substr(4))) {
      ids.slurm_job_id = p.substr(4);
    }
  }
  return ids;
}

}  // namespace mlos::daemon
