// SPDX-License-Identifier: Apache-2.0
#include "engine/embedded_policy_config.h"

#include <cstdlib>

#include "core/comma_list.h"
#include "os/environment.h"
#include "os/install_location.h"

namespace mlos {

namespace {

const char* env(const char* name) {
  const char* v = os::env(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

std::string embedded_policy_dir() {
  if (auto dir = os::locate_install_part(InstallPart::kPolicyDir, "MLOS_POLICY_DIR")) return *dir;
  if (const char* given = env("MLOS_POLICY_DIR")) return given;
  return os::configured_install_part_path(InstallPart::kPolicyDir);
}

std::vector<std::string> embedded_default_policies() {
  if (const char* d = os::env("MLOS_DEFAULT_POLICIES")) return split_comma_list(d);
  return {"thread-governor"};
}

Result<EmbeddedPolicyConfig> embedded_policy_config() {
  EmbeddedPolicyConfig c;
  auto host = os::locate_install_part(InstallPart::kPolicyHost, "MLOS_POLICY_HOST");
  if (!host) return make_error(MLOS_ERR_UNSUPPORTED, "no policy host: " + host.error().message + ", or run under mlosd");
  c.host_binary = *host;
  c.policy_dir = embedded_policy_dir();
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
  c.defaults = embedded_default_policies();
  return c;
}

}  // namespace mlos
