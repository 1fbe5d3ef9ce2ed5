// SPDX-License-Identifier: Apache-2.0
#include "protocol/grant.h"

#include <set>
#include <stdexcept>

#include "core/json_fields.h"
#include "mlos/training.h"

namespace mlos::protocol {

namespace {

using nlohmann::json;

const std::set<std::string>& request_keys() {
  static const std::set<std::string> keys{"op",       "id",          "num_cpus",      "memory_bytes",
                                          "numa_preference", "exclusive", "priority", "label",
                                          "single_node", "strict_membind", "page_fd", "envelope", "dry_run",
                                          "allowed_cpus", "policies", "num_gpus", "gpu_uuids",
                                          "exclusive_gpus", "cuda_visible_devices", "gpu_share_file"};
  return keys;
}

void decode_gpus(const json& a, GrantRequest& r) {
  GpuRequest& g = r.placement.gpus;
  g.count = optional_int_field(a, "num_gpus", 0);
  if (g.count < 0) throw std::invalid_argument("num_gpus < 0");
  if (a.contains("gpu_uuids")) {
    const json& u = a["gpu_uuids"];
    if (!u.is_array()) throw std::invalid_argument("gpu_uuids must be an array of GPU UUID strings");
    for (const auto& item : u) {
      if (!item.is_string() || item.get<std::string>().empty() || item.get<std::string>().size() > 96) {
        throw std::invalid_argument("gpu_uuids must hold GPU UUID strings (1-96 bytes), got " + item.dump());
      }
      g.uuids.push_back(item.get<std::string>());
    }
    if (g.uuids.size() > 64) throw std::invalid_argument("gpu_uuids names more than 64 GPUs");
  }
  g.exclusive = !a.contains("exclusive_gpus") || optional_bool_field(a, "exclusive_gpus");
  if (a.contains("cuda_visible_devices")) {
    if (!a["cuda_visible_devices"].is_string() || a["cuda_visible_devices"].get<std::string>().size() > 4096) {
      throw std::invalid_argument("cuda_visible_devices must be a string (at most 4096 bytes)");
    }
    r.cuda_visible_devices = a["cuda_visible_devices"].get<std::string>();
  }
  if (a.contains("gpu_share_file")) {
    const json& f = a["gpu_share_file"];
    if (!f.is_string() || f.get<std::string>().empty() || f.get<std::string>()[0] != '/' ||
        f.get<std::string>().size() > 4096) {
      throw std::invalid_argument("gpu_share_file must be an absolute path (at most 4096 bytes)");
    }
    r.gpu_share_file = f.get<std::string>();
  }
}

void decode_policies_and_bound(const json& a, GrantRequest& r) {
  if (a.contains("policies")) {
    const json& p = a["policies"];
    if (!p.is_object()) throw std::invalid_argument("policies must be an object of policy name -> config object");
    for (const auto& [name, config] : p.items()) {
      if (!config.is_object()) throw std::invalid_argument("the config of policy " + name + " must be an object");
    }
    r.policies = p;
  }
  if (a.contains("allowed_cpus")) {
    if (!a["allowed_cpus"].is_string()) throw std::invalid_argument("allowed_cpus must be a CPU list string");
    auto set = CpuSet::parse_list(a["allowed_cpus"].get<std::string>());
    if (!set || set->empty()) throw std::invalid_argument("allowed_cpus is not a non-empty CPU list");
    r.allowed = *set;
  }
}

// The strings in the list r[key] (none if absent); anything else in it is
// skipped, so a newer mlosd may add entries of another kind.
std::vector<std::string> strings_in(const json& r, const char* key) {
  std::vector<std::string> out;
  for (const auto& n : r.value(key, json::array())) {
    if (n.is_string()) out.push_back(n.get<std::string>());
  }
  return out;
}

json placement_fields(const Placement& p) {
  CpuSet mems;
  for (int n : p.nodes) mems.set(n);
  return json{{"cpus", p.cpu_set.to_list()},
              {"cpu_order", p.cpus},
              {"mems", mems.to_list()},
              {"nodes", p.nodes},
              {"primary_node", p.primary_node},
              {"memory_policy", static_cast<int>(p.memory_policy)},
              {"physical_cores", p.physical_cores},
              {"gpus", p.gpus},
              {"gpu_note", p.gpu_note}};
}

}  // namespace

json encode_grant_request(const GrantRequest& request) {
  const PlacementRequest& p = request.placement;
  json args{{"num_cpus", p.num_cpus},
            {"memory_bytes", p.memory_bytes},
            {"numa_preference", p.numa_preference},
            {"exclusive", p.exclusive},
            {"single_node", p.single_node},
            {"strict_membind", p.strict_membind},
            {"priority", request.priority},
            {"label", request.label},
            {"envelope", request.envelope}};
  if (request.allowed) args["allowed_cpus"] = request.allowed->to_list();
  if (request.page_fd >= 0) args["page_fd"] = request.page_fd;
  if (request.dry_run) args["dry_run"] = true;
  // Only when asked for: a mlosd from before policy modules refuses the
  // field, and a request without it must keep working there.
  if (!request.policies.empty()) args["policies"] = request.policies;
  // GPUs likewise: mlosd resolves CUDA_VISIBLE_DEVICES against NVML's
  // GPUs, which the requester need not load.
  if (p.gpus.wanted()) {
    args["num_gpus"] = p.gpus.count;
    if (!p.gpus.uuids.empty()) args["gpu_uuids"] = p.gpus.uuids;
    args["exclusive_gpus"] = p.gpus.exclusive;
    if (request.cuda_visible_devices) args["cuda_visible_devices"] = *request.cuda_visible_devices;
    if (!request.gpu_share_file.empty()) args["gpu_share_file"] = request.gpu_share_file;
  }
  return args;
}

Result<GrantRequest> decode_grant_request(const json& a) {
  try {
    if (!a.is_object()) throw std::invalid_argument("arguments must be a JSON object");
    for (const auto& [key, value] : a.items()) {
      if (!request_keys().count(key)) throw std::invalid_argument("unknown field '" + key + "'");
    }
    GrantRequest r;
    PlacementRequest& p = r.placement;
    p.num_cpus = optional_int_field(a, "num_cpus", 1);
    p.memory_bytes = a.contains("memory_bytes") ? non_negative_field(a, "memory_bytes") : 0;
    p.numa_preference = optional_int_field(a, "numa_preference", -1);
    p.exclusive = optional_bool_field(a, "exclusive");
    p.single_node = optional_bool_field(a, "single_node");
    p.strict_membind = optional_bool_field(a, "strict_membind");
    decode_gpus(a, r);
    r.priority = optional_int_field(a, "priority", 0);
    if (a.contains("label") && !a["label"].is_string()) throw std::invalid_argument("label must be a string");
    r.label = a.value("label", std::string());
    r.page_fd = optional_int_field(a, "page_fd", -1);
    r.envelope = optional_bool_field(a, "envelope");
    r.dry_run = optional_bool_field(a, "dry_run");
    decode_policies_and_bound(a, r);
    if (r.priority < MLOS_PRIORITY_MIN || r.priority > MLOS_PRIORITY_MAX) {
      throw std::invalid_argument("priority " + std::to_string(r.priority) + " outside [" +
                                  std::to_string(MLOS_PRIORITY_MIN) + ", " + std::to_string(MLOS_PRIORITY_MAX) + "]");
    }
    if (r.label.size() > 128) throw std::invalid_argument("label longer than 128 bytes");
    if (r.page_fd < -1) throw std::invalid_argument("page_fd < -1");
    return r;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("request: ") + e.what());
  }
}

json encode_grant_reply(const GrantReply& reply) {
  json out = placement_fields(reply.placement);
  if (reply.dry_run) {
    out["dry_run"] = true;
    out["nested_in"] = reply.nested_in ? json(*reply.nested_in) : json(nullptr);
    return out;
  }
  out["job"] = reply.job;
  out["cgroup"] = reply.cgroup;
  out["policies"] = reply.policies;
  out["notes"] = reply.notes;
  return out;
}

Result<GrantReply> decode_grant_reply(const json& r) {
  try {
    GrantReply g;
    Placement& p = g.placement;
    p.cpus = r.at("cpu_order").get<std::vector<int>>();
    auto set = CpuSet::parse_list(r.at("cpus").get<std::string>());
    if (!set) return set.error();
    p.cpu_set = *set;
    p.nodes = r.at("nodes").get<std::vector<int>>();
    p.primary_node = r.at("primary_node").get<int>();
    p.memory_policy = static_cast<mlos_memory_policy_t>(r.at("memory_policy").get<int>());
    p.physical_cores = r.at("physical_cores").get<int>();
    p.gpus = r.value("gpus", std::vector<std::string>());
    p.gpu_note = r.value("gpu_note", std::string());
    g.dry_run = r.value("dry_run", false);
    g.job = r.value("job", uint64_t{0});
    if (r.contains("nested_in") && r["nested_in"].is_number_unsigned()) g.nested_in = r["nested_in"].get<uint64_t>();
    g.cgroup = r.value("cgroup", std::string());
    g.policies = strings_in(r, "policies");
    g.notes = strings_in(r, "notes");
    return g;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_VERSION_MISMATCH, std::string("mlosd's grant is not understood: ") + e.what());
  }
}

}  // namespace mlos::protocol
