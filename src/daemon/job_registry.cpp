#include "daemon/job_registry.h"

#include <algorithm>
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

json JobRegistry::to_json() const {
  json list = json::array();
  for (const auto& r : jobs) {
    list.push_back({{"id", r.id},
                    {"pid", r.owner.pid},
                    {"start_time", r.owner.start_time},
                    {"uid", r.uid},
                    {"cpus", r.cpus.to_list()},
                    {"mems", r.mems.to_list()},
                    {"exclusive", r.exclusive},
                    {"memory_bytes", r.memory_bytes},
                    {"priority", r.priority},
                    {"label", r.label},
                    {"created_unix", r.created_unix},
                    {"page_fd", r.page_fd},
                    {"memory_event_fd", r.memory_event_fd},
                    {"memory_thresholds", r.memory_thresholds}});
  }
  return json{{"schema_version", kSchemaVersion}, {"next_id", next_id}, {"jobs", list}};
}

Result<JobRegistry> JobRegistry::from_json(const json& payload) {
  JobRegistry r;
  try {
    if (payload.at("schema_version").get<int>() != kSchemaVersion) {
      throw std::invalid_argument("schema_version " + payload.at("schema_version").dump() + " is not " +
                                  std::to_string(kSchemaVersion));
    }
    r.next_id = non_negative_field(payload, "next_id");
    std::set<uint64_t> ids;
    for (const json& j : payload.at("jobs")) {
      JobRecord rec;
      rec.id = non_negative_field(j, "id");
      rec.owner.pid = j.at("pid").get<int>();
      rec.owner.start_time = non_negative_field(j, "start_time");
      rec.uid = static_cast<uint32_t>(non_negative_field(j, "uid"));
      rec.cpus = list_field(j, "cpus");
      rec.mems = list_field(j, "mems");
      rec.exclusive = j.at("exclusive").get<bool>();
      rec.memory_bytes = non_negative_field(j, "memory_bytes");
      rec.priority = j.at("priority").get<int>();
      rec.label = j.at("label").get<std::string>();
      rec.created_unix = j.at("created_unix").get<int64_t>();
      rec.page_fd = j.at("page_fd").get<int>();
      // Added after the first registries were written: optional.
      rec.memory_event_fd = j.value("memory_event_fd", -1);
      rec.memory_thresholds = j.value("memory_thresholds", json());
      if (rec.memory_event_fd < -1) throw std::invalid_argument("job " + std::to_string(rec.id) + " has memory_event_fd < -1");
      if (!rec.memory_thresholds.is_null() && !rec.memory_thresholds.is_object()) {
        throw std::invalid_argument("job " + std::to_string(rec.id) + " has non-object memory_thresholds");
      }
      if (rec.page_fd < -1) throw std::invalid_argument("job " + std::to_string(rec.id) + " has page_fd < -1");
      if (rec.id == 0 || rec.id >= r.next_id) throw std::invalid_argument("job id " + std::to_string(rec.id) + " out of range");
      if (rec.owner.pid <= 0) throw std::invalid_argument("job " + std::to_string(rec.id) + " has pid <= 0");
      if (rec.cpus.empty()) throw std::invalid_argument("job " + std::to_string(rec.id) + " has no CPUs");
      if (!ids.insert(rec.id).second) throw std::invalid_argument("job id " + std::to_string(rec.id) + " repeated");
      r.jobs.push_back(std::move(rec));
    }
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_STATE_CORRUPT, std::string("job registry: ") + e.what());
  }
  return r;
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
