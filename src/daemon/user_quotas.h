/* SPDX-License-Identifier: Apache-2.0 */
// Per-uid bounds on what one local user may hold in mlosd, so that no user
// can take every connection, every exclusive CPU or the registry from the
// others. Root (uid 0) is exempt, and a share of the connections is kept
// for it, so an administrator can always reach a saturated daemon. Pure
// logic: the daemon counts, this decides. See docs/security.md.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::daemon {

struct UserQuotas {
  int connections_per_uid = 64;
  int jobs_per_uid = 4096;
  // -1: all but one of the CPUs mlosd hands out (at least 1), so that one
  // user alone never holds the whole node exclusively.
  int exclusive_cpus_per_uid = -1;
  uint64_t memory_bytes_per_uid = 0;  // summed memory_bytes of a uid's jobs; 0: no bound
  int root_reserved_connections = 8;  // of max_clients, accepted only for root

  // The "quotas" object of the config file: every key optional, unknown
  // keys and out-of-range values rejected (INVALID_ARGUMENT naming them).
  Status merge(const nlohmann::json& config);
  nlohmann::json to_json() const;
  // exclusive_cpus_per_uid with -1 resolved for a node of `cpus` CPUs.
  int exclusive_cpu_bound(int cpus) const;
};

// What one uid holds now.
struct UserHoldings {
  int connections = 0;
  int jobs = 0;
  int exclusive_cpus = 0;
  uint64_t memory_bytes = 0;

  bool empty() const { return connections == 0 && jobs == 0; }
  nlohmann::json to_json() const;
};

// Whether `uid`, holding `held`, may take one more job of `exclusive_cpus`
// exclusive CPUs (0 for a shared job) and `memory_bytes`, on a node of
// `node_cpus` CPUs. MLOS_ERR_QUOTA naming the bound and what is held if not.
Status check_job_quota(const UserQuotas& q, uint32_t uid, const UserHoldings& held, int exclusive_cpus,
                       uint64_t memory_bytes, int node_cpus);
// Whether a new connection of `uid` may be accepted, with `total` clients
// connected of `max_clients`.
Status check_connection_quota(const UserQuotas& q, uint32_t uid, const UserHoldings& held, int total,
                              int max_clients);

}  // namespace mlos::daemon
