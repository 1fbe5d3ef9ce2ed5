#include "engine/embedded_policy_config.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "policy/install_defaults.h"

namespace mlos {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The directory of the object this code was linked into (libmlos.so, or a
// program that linked the library statically), "" if unknown.
std::string library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_dir), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool executable_file(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool directory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// `path` without "..", "." or symlinks in it, as it is shown in messages.
std::string canonical(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out = real;
  free(real);
  return out;
}

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (!name.empty()) out.push_back(name);
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<EmbeddedPolicyConfig> embedded_policy_config() {
  EmbeddedPolicyConfig c;
  const std::string lib = library_dir();
  std::vector<std::string> hosts, dirs;
  if (const char* h = env("MLOS_POLICY_HOST")) {
    hosts = {h};
  } else {
    if (!lib.empty()) {
      hosts = {lib + "/mlos/mlos-policyhost", lib + "/../libexec/mlos/mlos-policyhost", lib + "/../bin/mlos-policyhost"};
    }
    hosts.push_back(policy::installed_policy_host());
  }
  if (const char* d = env("MLOS_POLICY_DIR")) {
    dirs = {d};
  } else {
    if (!lib.empty()) dirs = {lib + "/mlos/policies", lib + "/../policies"};
    dirs.push_back(policy::installed_policy_dir());
  }
  std::string looked;
  for (const auto& h : hosts) {
    if (executable_file(h)) {
      c.host_binary = canonical(h);
      break;
    }
    looked += (looked.empty() ? "" : ", ") + h;
  }
  if (c.host_binary.empty()) {
    return make_error(MLOS_ERR_UNSUPPORTED, "no policy host (mlos-policyhost) is installed: looked at " + looked +
                                                "; set MLOS_POLICY_HOST, or run under mlosd");
  }
  c.policy_dir = dirs.back();
  for (const auto& d : dirs) {
    if (directory(d)) {
      c.policy_dir = canonical(d);
      break;
    }
  }
  if (const char* every = env("MLOS_JOB_POLICIES")) {
    c.every_job = nlohmann::json::parse(every, nullptr, /*allow_exceptions=*/false);
    bool valid = c.every_job.is_object();
    if (valid) {
      for (const auto& config : c.every_job) valid = valid && config.is_object();
    }
    if (!valid) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("MLOS_JOB_POLICIES is not a JSON object of policy "
                                                               "configs, e.g. {\"example\": {\"threads\": 1}}: ") + every);
    }
  }
  if (const char* d = std::getenv("MLOS_DEFAULT_POLICIES")) {
    c.defaults = split_names(d);
  } else {
    c.defaults = {"thread-governor"};
  }
  return c;
}

}  // namespace mlos
