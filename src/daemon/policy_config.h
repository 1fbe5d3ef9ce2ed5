/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's "policies" config object (docs/policies.md):
//
//   "policies": {
//     "enabled": true,
//     "dir": "<libdir>/mlos/policies",      only root-owned, not group/other-writable files load
//     "host": "<libexecdir>/mlos/mlos-policyhost",   (defaults: daemon_policy_paths())
//     "defaults": ["phase-weights", "thread-governor"],   attached to every job
//     "config": {"<policy>": {...}},        node-wide config given to the policy's init
//     "tick_interval_ms": {"<policy>": N},  overrides the policy's own tick interval (10..3600000)
//     "user": "nobody",                     hosts drop to this user
//     "deadline_ms": 1000, "start_deadline_ms": 5000, "unload_grace_ms": 30000,
//     "memory_limit_bytes": 268435456       each host's address-space limit
//   }
//
// Every key optional; unknown keys and bad values reject the config.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::daemon {

// The defaults of "dir" and "host": beside mlosd's own binary, whatever the
// prefix, when the file there passes the trust test (owned by root, it and
// every directory above it writable by neither group nor others:
// os/trusted_path.h); else the configured prefix's. Found once per
// process; `notes` names each file passed over and why (mlosd logs them).
struct DaemonPolicyPaths {
  std::string dir, host;
  std::vector<std::string> notes;
};
const DaemonPolicyPaths& daemon_policy_paths();

struct DaemonPolicyConfig {
  bool enabled = true;
  std::string dir;    // default: daemon_policy_paths()
  std::string host;
  std::vector<std::string> defaults{"phase-weights", "thread-governor"};
  nlohmann::json config = nlohmann::json::object();
  std::map<std::string, uint32_t> tick_interval_ms;
  std::string user = "nobody";
  int deadline_ms = 1000;
  int start_deadline_ms = 5000;
  int unload_grace_ms = 30000;
  uint64_t memory_limit_bytes = 256ull << 20;

  DaemonPolicyConfig();
  Status merge(const nlohmann::json& c);
  nlohmann::json to_json() const;
};

}  // namespace mlos::daemon
