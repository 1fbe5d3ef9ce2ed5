/* SPDX-License-Identifier: Apache-2.0 */
// Where the embedded engine finds policy modules and their host, and which
// policies every embedded job gets (docs/policies.md, "Embedded mode").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos {

struct EmbeddedPolicyConfig {
  std::string host_binary;
  std::string policy_dir;
  std::vector<std::string> defaults;
  // Requested for every job of the process, {"name": {config}}: what
  // `mlos run --policy` hands its command in embedded mode.
  nlohmann::json every_job = nlohmann::json::object();
};

// The policy directory of an embedded job: $MLOS_POLICY_DIR when set;
// else beside the binary that holds libmlos's code (an installed prefix's
// lib/mlos/policies, the Python package's mlos_training/mlos/policies, a
// build tree's policies/), then the configured prefix's
// (os/install_location.h). A directory that does not exist is still
// returned: an empty catalog, named in errors.
std::string embedded_policy_dir();

// The policies every embedded job gets: $MLOS_DEFAULT_POLICIES, a comma-
// separated list ("" for none), else "thread-governor".
std::vector<std::string> embedded_default_policies();

// The host (os::locate_install_part: $MLOS_POLICY_HOST, beside libmlos's
// binary, the configured prefix's; an executable file), embedded_policy_dir(),
// embedded_default_policies(), and every job's: $MLOS_JOB_POLICIES, a JSON
// object of configs.
// UNSUPPORTED, naming every place looked at, when no host is found;
// INVALID_ARGUMENT when $MLOS_JOB_POLICIES is not a JSON object of objects.
// (EmbeddedPolicies::for_this_process keeps the first result that finds a
// host for the life of the process.)
Result<EmbeddedPolicyConfig> embedded_policy_config();

}  // namespace mlos
