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

// The first of, for the host and for the directory separately:
//  1. $MLOS_POLICY_HOST, $MLOS_POLICY_DIR;
//  2. next to the libmlos in use (L: its directory): L/mlos/mlos-policyhost
//     and L/mlos/policies (the Python wheel), L/../libexec/mlos/
//     mlos-policyhost (an installed prefix), L/../bin/mlos-policyhost and
//     L/../policies (the build tree);
//  3. the install prefix's (policy/install_defaults.h).
// A host must be an executable file; a directory must exist (a missing
// one is an empty catalog). Defaults: $MLOS_DEFAULT_POLICIES, a comma-
// separated list ("" for none), else "thread-governor". Every job's:
// $MLOS_JOB_POLICIES, a JSON object of configs.
// UNSUPPORTED, naming every place looked at, when no host is found;
// INVALID_ARGUMENT when $MLOS_JOB_POLICIES is not a JSON object of objects.
// (EmbeddedPolicies::for_this_process keeps the first result that finds a
// host for the life of the process.)
Result<EmbeddedPolicyConfig> embedded_policy_config();

}  // namespace mlos
