// SPDX-License-Identifier: Apache-2.0
#include "engine/helper_binary.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace mlos {

namespace {

bool executable_file(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string resolved_path(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out = real;
  free(real);
  return out;
}

std::string library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_dir), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Result<std::string> find_helper_binary(const std::string& name, const char* env_var, const std::string& installed) {
  std::vector<std::string> candidates;
  const char* from_env = std::getenv(env_var);
  if (from_env != nullptr && *from_env != '\0') {
    candidates = {from_env};
  } else {
    if (const std::string lib = library_dir(); !lib.empty()) {
      candidates = {lib + "/mlos/" + name, lib + "/../libexec/mlos/" + name, lib + "/../bin/" + name};
    }
    candidates.push_back(installed);
  }
  std::string looked;
  for (const auto& c : candidates) {
    if (executable_file(c)) return resolved_path(c);
    looked += (looked.empty() ? "" : ", ") + c;
  }
  return make_error(MLOS_ERR_UNSUPPORTED, "no " + name + " is installed: looked at " + looked + "; set " + env_var);
}

}  // namespace mlos
