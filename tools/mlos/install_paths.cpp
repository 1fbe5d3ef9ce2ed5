#include "install_paths.h"

#include <unistd.h>

#include <climits>

// Set by CMakeLists.txt from the install prefix; the fallbacks keep a
// build without them compiling.
#ifndef MLOS_DEFAULT_POLICY_DIR
#define MLOS_DEFAULT_POLICY_DIR "/usr/local/lib/mlos/policies"
#endif
#ifndef MLOS_DEFAULT_POLICY_HOST
#define MLOS_DEFAULT_POLICY_HOST "/usr/local/libexec/mlos/mlos-policyhost"
#endif

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
  out.push_back(MLOS_DEFAULT_POLICY_HOST);
  return out;
}

std::string default_policy_dir() { return MLOS_DEFAULT_POLICY_DIR; }

}  // namespace mlos::cli
