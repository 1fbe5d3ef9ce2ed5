// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_registry.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "core/json_fields.h"

namespace mlos::daemon {

namespace {

using nlohmann::json;

CpuSet list_field(const json& j, const char* key) {
  auto set = CpuSet::parse_list(j.at(key).get<std::string>());
  if (!set) throw std::invalid_argument(std::string(key) + ": " + set.error().message);
  return *set;
}

}  // namespace

json JobRecord::to_json() const {
  return json{{"id", id},
              {"pid", owner.pid},
              {"start_time", owner.start_time},
              {"uid", uid},
              {"cpus", cpus.to_list()},
              {"mems", mems.to_list()},
              {"exclusive", exclusive},
              {"memory_bytes", memory_bytes},
              {"priority", priority},
              {"label", label},
              {"created_unix", created_unix},
              {"page_fd", page_fd},
              {"memory_event_fd", memory_event_fd},
              {"memory_thresholds", memory_thresholds},
              {"parent", parent},
              {"host", host},
              {"envelope", envelope},
              {"ledger_claim", ledger_claim},
              {"confines", confines},
              {"policies", policies},
              {"origin_cgroup", origin_cgroup},
              {"stays_in_origin", stays_in_origin},
              {"gpus", gpus},
              {"gpus_exclusive", gpus_exclusive},
              {"gpu_share_file", gpu_share_file}};
}

namespace {

// j[key] as an int; std::invalid_argument for anything that is not an
// integer in int's range (nlohmann's get<int>() would narrow silently).
int int_field(const json& j, const char* key) { return int_in_range(j.at(key), key, INT_MIN, INT_MAX); }

// One record, every field checked; std::invalid_argument naming the first
// bad one.
JobRecord record_from(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("a job is not a JSON object");
  JobRecord rec;
  rec.id = non_negative_field(j, "id");
  rec.owner.pid = int_field(j, "pid");
  rec.owner.start_time = non_negative_field(j, "start_time");
  const uint64_t uid = non_negative_field(j, "uid");
  if (uid > UINT32_MAX) throw std::invalid_argument("job " + std::to_string(rec.id) + " has uid > 2^32-1");
  rec.uid = static_cast<uint32_t>(uid);
  rec.cpus = list_field(j, "cpus");
  rec.mems = list_field(j, "mems");
  rec.exclusive = j.at("exclusive").get<bool>();
  rec.memory_bytes = non_negative_field(j, "memory_bytes");
  rec.priority = int_field(j, "priority");
  rec.label = j.at("label").get<std::string>();
  rec.created_unix = j.at("created_unix").get<int64_t>();
  rec.page_fd = int_field(j, "page_fd");
  // Added after the first registries were written: optional.
  rec.memory_event_fd = j.contains("memory_event_fd") ? int_field(j, "memory_event_fd") : -1;
  rec.memory_thresholds = j.value("memory_thresholds", json());
  // Added with nested and hosted jobs: optional.
  rec.parent = j.contains("parent") ? non_negative_field(j, "parent") : 0;
  rec.host = j.contains("host") ? non_negative_field(j, "host") : 0;
  // Added with one book (mlos run through mlosd): optional.
  rec.envelope = j.contains("envelope") ? j.at("envelope").get<bool>() : false;
  rec.ledger_claim = j.contains("ledger_claim") ? non_negative_field(j, "ledger_claim") : 0;
  rec.confines = j.contains("confines") ? j.at("confines").get<bool>() : false;
  // Added with the return to the origin cgroup: optional.
  rec.origin_cgroup = j.value("origin_cgroup", std::string());
  rec.stays_in_origin = j.value("stays_in_origin", false);
  // Added with GPU claims: optional.
  if (j.contains("gpus")) {
    for (const auto& u : j.at("gpus")) {
      if (!u.is_string() || u.get<std::string>().empty()) {
        throw std::invalid_argument("job " + std::to_string(rec.id) + " has a GPU that is not a UUID string");
      }
      rec.gpus.push_back(u.get<std::string>());
    }
  }
  rec.gpus_exclusive = j.value("gpus_exclusive", false);
  rec.gpu_share_file = j.value("gpu_share_file", std::string());  // added with GPU sharing
  // Added with policy modules: optional.
  rec.policies = j.value("policies", json::object());
  if (!rec.policies.is_object()) throw std::invalid_argument("job " + std::to_string(rec.id) + " has non-object policies");
  for (const auto& [name, config] : rec.policies.items()) {
    if (!config.is_object()) {
      throw std::invalid_argument("job " + std::to_string(rec.id) + " has a non-object config for policy " + name);
    }
  }
  if (rec.parent == rec.id || rec.host == rec.id || (rec.parent != 0 && rec.host != 0)) {
    throw std::invalid_argument("job " + std::to_string(rec.id) + " has an impossible parent/host");
  }
  if (rec.memory_event_fd < -1) throw std::invalid_argument("job " + std::to_string(rec.id) + " has memory_event_fd < -1");
  if (!rec.memory_thresholds.is_null() && !rec.memory_thresholds.is_object()) {
    throw std::invalid_argument("job " + std::to_string(rec.id) + " has non-object memory_thresholds");
  }
  if (rec.page_fd < -1) throw std::invalid_argument("job " + std::to_string(rec.id) + " has page_fd < -1");
  if (rec.id == 0 || rec.id > JobRegistry::kMaxJobId) {
    throw std::invalid_argument("job id " + std::to_string(rec.id) + " out of range");
  }
  if (rec.owner.pid <= 0) throw std::invalid_argument("job " + std::to_string(rec.id) + " has pid <= 0");
  if (rec.cpus.empty()) throw std::invalid_argument("job " + std::to_string(rec.id) + " has no CPUs");
  return rec;
}

uint64_t next_id_field(const json& j) {
  const uint64_t next_id = non_negative_field(j, "next_id");
  if (next_id == 0 || next_id > JobRegistry::kMaxJobId + 1) {
    throw std::invalid_argument("next_id " + std::to_string(next_id) + " outside 1.." +
                                std::to_string(JobRegistry::kMaxJobId + 1));
  }
  return next_id;
}

}  // namespace

json JobRegistry::to_json() const {
  json list = json::array();
  for (const auto& r : jobs) list.push_back(r.to_json());
  return json{{"schema_version", kSchemaVersion}, {"next_id", next_id}, {"jobs", list}};
}

Result<JobRegistry> JobRegistry::from_json(const json& payload) {
  JobRegistry r;
  try {
    if (!payload.is_object()) throw std::invalid_argument("payload is not a JSON object");
    if (payload.at("schema_version") != kSchemaVersion) {
      throw std::invalid_argument("schema_version " + payload.at("schema_version").dump() + " is not " +
                                  std::to_string(kSchemaVersion));
    }
    r.next_id = next_id_field(payload);
    if (!payload.at("jobs").is_array()) throw std::invalid_argument("jobs is not an array");
    std::set<uint64_t> ids;
    for (const json& j : payload.at("jobs")) {
      JobRecord rec = record_from(j);
      if (rec.id >= r.next_id) {
        throw std::invalid_argument("job id " + std::to_string(rec.id) + " out of range (next_id " +
                                    std::to_string(r.next_id) + ")");
      }
      if (!ids.insert(rec.id).second) throw std::invalid_argument("job id " + std::to_string(rec.id) + " repeated");
      r.jobs.push_back(std::move(rec));
    }
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_STATE_CORRUPT, std::string("job registry: ") + e.what());
  }
  return r;
}

json JobRegistry::put_entry(const JobRecord& record, uint64_t next_id) {
  return json{{"put", record.to_json()}, {"next_id", next_id}};
}

json JobRegistry::remove_entry(const std::vector<uint64_t>& ids) { return json{{"remove", ids}}; }

Status JobRegistry::replay(const std::vector<json>& entries) {
  std::map<uint64_t, JobRecord> by_id;
  for (JobRecord& r : jobs) by_id.emplace(r.id, r);
  uint64_t next = next_id;
  size_t n = 0;
  try {
    for (const json& entry : entries) {
      ++n;
      if (!entry.is_object()) throw std::invalid_argument("not a put or a remove");
      if (entry.contains("put") && entry.size() == 2) {
        JobRecord rec = record_from(entry.at("put"));
        const uint64_t entry_next = next_id_field(entry);
        if (rec.id >= entry_next) throw std::invalid_argument("job id " + std::to_string(rec.id) + " >= next_id");
        next = std::max(next, entry_next);
        by_id[rec.id] = std::move(rec);
      } else if (entry.contains("remove") && entry.size() == 1 && entry.at("remove").is_array()) {
        for (const json& id : entry.at("remove")) {
          if (!is_non_negative_integer(id)) throw std::invalid_argument("remove lists a non-id");
          by_id.erase(id.get<uint64_t>());
        }
      } else {
        throw std::invalid_argument("not a put or a remove");
      }
    }
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_STATE_CORRUPT, "job registry journal, entry " + std::to_string(n) + ": " + e.what());
  }
  next_id = next;
  jobs.clear();
  for (auto& [id, r] : by_id) jobs.push_back(std::move(r));
  return Status::Ok();
}

ReconcilePlan reconcile(const JobRegistry& registry, const std::function<bool(const ProcessId&)>& is_alive,
                        const std::vector<std::string>& cgroups) {
  ReconcilePlan plan;
  std::set<std::string> known;
  for (const auto& r : registry.jobs) {
    known.insert(r.cgroup());
    (is_alive(r.owner) ? plan.adopt : plan.prune).push_back(r);
  }
  for (const auto& name : cgroups) {
    if (!known.count(name)) plan.stray_cgroups.push_back(name);
  }
  std::sort(plan.stray_cgroups.begin(), plan.stray_cgroups.end());
  return plan;
}

}  // namespace mlos::daemon
