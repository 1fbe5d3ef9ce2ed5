// SPDX-License-Identifier: Apache-2.0
#include "engine/embedded_policy_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "core/comma_list.h"
#include "engine/helper_binary.h"
#include "policy/install_defaults.h"

namespace mlos {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool directory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}


}  // namespace

Result<EmbeddedPolicyConfig> embedded_policy_config() {
  EmbeddedPolicyConfig c;
  const std::string lib = library_dir();
  std::vector<std::string> dirs;
  if (const char* d = env("MLOS_POLICY_DIR")) {
    dirs = {d};
  } else {
    if (!lib.empty()) dirs = {lib + "/mlos/policies", lib + "/../policies"};
    dirs.push_back(policy::installed_policy_dir());
  }
  auto host = find_helper_binary("mlos-policyhost", "MLOS_POLICY_HOST", policy::installed_policy_host());
  if (!host) {
    return make_error(MLOS_ERR_UNSUPPORTED, "no policy host: " + host.error().message + ", or run under mlosd");
  }
  c.host_binary = *host;
  c.policy_dir = dirs.back();
  for (const auto& d : dirs) {
    if (directory(d)) {
      c.policy_dir = resolved_path(d);
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
    c.defaults = split_comma_list(d);
  } else {
    c.defaults = {"thread-governor"};
  }
  return c;
}

}  // namespace mlos
