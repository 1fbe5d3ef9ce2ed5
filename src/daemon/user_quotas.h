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
  // -1: all but one of the node's GPUs (at least 1), as for CPUs. Counts
  // GPUs held exclusively (a GPU claim's default); shared claims take no
  // GPU from anyone.
  int exclusive_gpus_per_uid = -1;
  int root_reserved_connections = 8;  // of max_clients, accepted only for root

  // The "quotas" object of the config file: every key optional, unknown
  // keys and out-of-range values rejected (INVALID_ARGUMENT naming them).
  Status merge(const nlohmann::json& config);
  nlohmann::json to_json() const;
  // exclusive_cpus_per_uid with -1 resolved for a node of `cpus` CPUs.
  int exclusive_cpu_bound(int cpus) const;
  // exclusive_gpus_per_uid with -1 resolved for a node of `gpus` GPUs.
  int exclusive_gpu_bound(int gpus) const;
};

// What one uid holds now.
struct UserHoldings {
  int connections = 0;
  int jobs = 0;
  int exclusive_cpus = 0;
  uint64_t memory_bytes = 0;
  int exclusive_gpus = 0;

  bool empty() const { return connections == 0 && jobs == 0; }
  nlohmann::json to_json() const;
};

// What one more job would add to its uid's holdings, and the node's size
// that the -1 defaults resolve against.
struct JobAsk {
  int exclusive_cpus = 0;  // 0 for a shared job
  uint64_t memory_bytes = 0;
  int exclusive_gpus = 0;
  int node_cpus = 0;
  int node_gpus = 0;
};

// Whether `uid`, holding `held`, may take one more job asking `ask`.
// MLOS_ERR_QUOTA naming the bound and what is held if not.
Status check_job_quota(const UserQuotas& q, uint32_t uid, const UserHoldings& held, const JobAsk& ask);
// Whether a new connection of `uid` may be accepted, with `total` clients
// connected of `max_clients`.
Status check_connection_quota(const UserQuotas& q, uint32_t uid, const UserHoldings& held, int total,
                              int max_clients);

}  // namespace mlos::daemon
