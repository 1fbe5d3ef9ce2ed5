/* SPDX-License-Identifier: Apache-2.0 */
// `mlos policy info`: a policy's self-description, asked of the policy
// itself by running `mlos-policyhost --describe` on its file. The policy's
// code runs only in that confined host process, never in mlos.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::cli {

// Runs `host --policy path --name name --describe` and returns the JSON it
// prints ({"name", "description", "config_schema", "tick_interval_ms"}).
// Errors: NOT_FOUND (host missing), POLICY_FAILED (the host exited non-zero,
// was killed, printed no JSON, or ran past `timeout_ms`; the message holds
// its stderr), SYSTEM (pipes, fork).
Result<nlohmann::json> describe_policy(const std::string& host, const std::string& path, const std::string& name,
                                       int timeout_ms = 10000);

}  // namespace mlos::cli
