// SPDX-License-Identifier: Apache-2.0
#include "install_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "policy/install_defaults.h"

namespace mlos::cli {

std::string own_directory() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::vector<std::string> policy_host_candidates() {
  std::vector<std::string> out;
  if (const std::string dir = own_directory(); !dir.empty()) out.push_back(dir + "/mlos-policyhost");
  out.push_back(policy::installed_policy_host());
  return out;
}

std::string default_policy_dir() {
  if (const std::string dir = own_directory(); !dir.empty()) {
    const std::string parent = dir.substr(0, dir.rfind('/'));
    for (const std::string& candidate : {dir + "/policies", parent + "/policies"}) {
      struct stat st {};
      if (stat(candidate.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return candidate;
    }
  }
  return policy::installed_policy_dir();
}

std::string gpushare_library() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("MLOS_GPUSHARE_LIBRARY"); env != nullptr && *env) return env;
  if (const std::string dir = own_directory(); !dir.empty()) {
    candidates.push_back(dir.substr(0, dir.rfind('/')) + "/lib/libmlos-gpushare.so");
  }
  candidates.push_back(policy::installed_gpushare_library());
  for (const std::string& c : candidates) {
    if (access(c.c_str(), R_OK) == 0) return c;
  }
  return "";
}

}  // namespace mlos::cli
