// SPDX-License-Identifier: Apache-2.0
#include "daemon/user_quotas.h"

#include <algorithm>
#include <limits>

#include "core/config_section.h"
#include "core/json_fields.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

std::string uid_name(uint32_t uid) { return "uid " + std::to_string(uid); }

}  // namespace

Status UserQuotas::merge(const json& c) {
  auto read_key = [](UserQuotas& next, const std::string& key, const json& v) -> Status {
    if (key == "connections_per_uid") {
      next.connections_per_uid = int_in_range(v, "quotas." + key, 1, 65536);
    } else if (key == "jobs_per_uid") {
      next.jobs_per_uid = int_in_range(v, "quotas." + key, 1, 1 << 20);
    } else if (key == "exclusive_cpus_per_uid") {
      next.exclusive_cpus_per_uid = int_in_range(v, "quotas." + key, -1, 1 << 16);
    } else if (key == "exclusive_gpus_per_uid") {
      next.exclusive_gpus_per_uid = int_in_range(v, "quotas." + key, -1, 1 << 16);
    } else if (key == "memory_bytes_per_uid") {
      if (!is_non_negative_integer(v)) {
        throw std::invalid_argument("quotas.memory_bytes_per_uid must be a whole number of bytes from 0 to 2^64-1");
      }
      next.memory_bytes_per_uid = v.get<uint64_t>();
    } else if (key == "root_reserved_connections") {
      next.root_reserved_connections = int_in_range(v, "quotas." + key, 0, 65536);
    } else {
      throw std::invalid_argument("unknown key 'quotas." + key + "'");
    }
    return Status::Ok();
  };
  return merge_config_section(*this, c, "quotas must be a JSON object", "", read_key);
}

json UserQuotas::to_json() const {
  return json{{"connections_per_uid", connections_per_uid},
              {"jobs_per_uid", jobs_per_uid},
              {"exclusive_cpus_per_uid", exclusive_cpus_per_uid},
              {"memory_bytes_per_uid", memory_bytes_per_uid},
              {"exclusive_gpus_per_uid", exclusive_gpus_per_uid},
              {"root_reserved_connections", root_reserved_connections}};
}

int UserQuotas::exclusive_cpu_bound(int cpus) const {
  return exclusive_cpus_per_uid >= 0 ? exclusive_cpus_per_uid : std::max(1, cpus - 1);
}

int UserQuotas::exclusive_gpu_bound(int gpus) const {
  return exclusive_gpus_per_uid >= 0 ? exclusive_gpus_per_uid : std::max(1, gpus - 1);
}

json UserHoldings::to_json() const {
  return json{{"connections", connections},   {"jobs", jobs},
              {"exclusive_cpus", exclusive_cpus}, {"memory_bytes", memory_bytes},
              {"exclusive_gpus", exclusive_gpus}};
}

Status check_job_quota(const UserQuotas& q, uint32_t uid, const UserHoldings& held, const JobAsk& ask) {
  const int exclusive_cpus = ask.exclusive_cpus;
  const uint64_t memory_bytes = ask.memory_bytes;
  if (uid == 0) return Status::Ok();
  if (held.jobs + 1 > q.jobs_per_uid) {
    return make_error(MLOS_ERR_QUOTA, uid_name(uid) + " holds " + std::to_string(held.jobs) +
                                          " jobs, the most one user may hold (quotas.jobs_per_uid)");
  }
  const int cpu_bound = q.exclusive_cpu_bound(ask.node_cpus);
  if (exclusive_cpus > 0 && held.exclusive_cpus + exclusive_cpus > cpu_bound) {
    return make_error(MLOS_ERR_QUOTA, uid_name(uid) + " holds " + std::to_string(held.exclusive_cpus) +
                                          " exclusive CPUs and asks for " + std::to_string(exclusive_cpus) +
                                          " more; one user may hold " + std::to_string(cpu_bound) +
                                          " (quotas.exclusive_cpus_per_uid)");
  }
  if (q.memory_bytes_per_uid > 0 && memory_bytes > 0 &&
      (memory_bytes > q.memory_bytes_per_uid || held.memory_bytes > q.memory_bytes_per_uid - memory_bytes)) {
    return make_error(MLOS_ERR_QUOTA, uid_name(uid) + " holds " + std::to_string(held.memory_bytes) +
                                          " bytes of job memory and asks for " + std::to_string(memory_bytes) +
                                          " more; one user may hold " + std::to_string(q.memory_bytes_per_uid) +
                                          " (quotas.memory_bytes_per_uid)");
  }
  const int gpu_bound = q.exclusive_gpu_bound(ask.node_gpus);
  if (ask.exclusive_gpus > 0 && held.exclusive_gpus + ask.exclusive_gpus > gpu_bound) {
    return make_error(MLOS_ERR_QUOTA, uid_name(uid) + " holds " + std::to_string(held.exclusive_gpus) +
                                          " exclusive GPUs and asks for " + std::to_string(ask.exclusive_gpus) +
                                          " more; one user may hold " + std::to_string(gpu_bound) +
                                          " (quotas.exclusive_gpus_per_uid)");
  }
  return Status::Ok();
}

Status check_connection_quota(const UserQuotas& q, uint32_t uid, const UserHoldings& held, int total,
                              int max_clients) {
  if (total >= max_clients) return make_error(MLOS_ERR_DAEMON_UNAVAILABLE, "too many clients; try again later");
  if (uid == 0) return Status::Ok();
  if (total >= max_clients - q.root_reserved_connections) {
    return make_error(MLOS_ERR_DAEMON_UNAVAILABLE,
                      "too many clients; the remaining connections are kept for root (quotas.root_reserved_connections)");
  }
  if (held.connections >= q.connections_per_uid) {
    return make_error(MLOS_ERR_QUOTA, uid_name(uid) + " has " + std::to_string(held.connections) +
                                          " connections open, the most one user may have (quotas.connections_per_uid)");
  }
  return Status::Ok();
}

}  // namespace mlos::daemon
