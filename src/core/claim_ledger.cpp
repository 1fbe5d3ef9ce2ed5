// SPDX-License-Identifier: Apache-2.0
#include "core/claim_ledger.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json_fields.h"

namespace mlos {

using nlohmann::json;

namespace {

Claim claim_from_json(const json& j) {
  Claim c;
  c.id = non_negative_field(j, "id");
  c.owner.pid = j.at("pid").get<int>();
  c.owner.start_time = non_negative_field(j, "start_time");
  c.uid = j.at("uid").get<uint32_t>();
  auto cpus = CpuSet::parse_list(j.at("cpus").get<std::string>());
  if (!cpus) throw std::invalid_argument(cpus.error().message);
  c.cpus = cpus.value();
  c.exclusive = j.at("exclusive").get<bool>();
  c.envelope = j.value("envelope", false);
  c.numa_node = j.at("numa_node").get<int>();
  c.memory_bytes = j.value("memory_bytes", uint64_t{0});
  c.label = j.value("label", std::string());
  c.created_unix = j.value("created_unix", int64_t{0});
  if (j.contains("gpus")) {
    for (const auto& u : j.at("gpus")) {
      if (!u.is_string() || u.get<std::string>().empty()) throw std::invalid_argument("gpus: not a UUID string");
      c.gpus.push_back(u.get<std::string>());
    }
  }
  c.gpus_exclusive = j.value("gpus_exclusive", false);
  if (c.id == 0 || c.owner.pid <= 0) throw std::invalid_argument("claim with id 0 or pid <= 0");
  return c;
}

json claim_to_json(const Claim& c) {
  json j{{"id", c.id},           {"pid", c.owner.pid},        {"start_time", c.owner.start_time},
         {"uid", c.uid},         {"cpus", c.cpus.to_list()},  {"exclusive", c.exclusive},
         {"envelope", c.envelope}, {"numa_node", c.numa_node}, {"memory_bytes", c.memory_bytes},
         {"label", c.label},     {"created_unix", c.created_unix}};
  // Only on claims with GPUs, so that ledgers without any read the same
  // in libraries from before GPU claims.
  if (!c.gpus.empty()) {
    j["gpus"] = c.gpus;
    j["gpus_exclusive"] = c.gpus_exclusive;
  }
  return j;
}

}  // namespace

Result<ClaimLedger> ClaimLedger::parse(std::string_view text) {
  ClaimLedger ledger;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return ledger;
  try {
    json j = json::parse(text);
    int version = j.at("schema_version").get<int>();
    if (version != kSchemaVersion && version != kSchemaVersionWithGpus) {
      return make_error(MLOS_ERR_STATE_CORRUPT, "ledger schema_version " + std::to_string(version) +
                                                    " is not a supported one (" + std::to_string(kSchemaVersion) +
                                                    ", " + std::to_string(kSchemaVersionWithGpus) + ")");
    }
    ledger.next_id = non_negative_field(j, "next_id");
    ledger.boot_id = j.value("boot_id", std::string());
    for (const auto& cj : j.at("claims")) {
      Claim c = claim_from_json(cj);
      if (c.id >= ledger.next_id) throw std::invalid_argument("claim id >= next_id");
      ledger.claims.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_STATE_CORRUPT, std::string("ledger is not valid: ") + e.what());
  }
  return ledger;
}

std::string ClaimLedger::serialize() const {
  json arr = json::array();
  bool gpus = false;
  for (const auto& c : claims) {
    arr.push_back(claim_to_json(c));
    gpus = gpus || !c.gpus.empty();
  }
  json j{{"schema_version", gpus ? kSchemaVersionWithGpus : kSchemaVersion}, {"next_id", next_id}, {"boot_id", boot_id}, {"claims", arr}};
  // Labels come from callers (the C API's request, `mlos run`'s CMD) and may
  // hold bytes that are not UTF-8: written as U+FFFD rather than thrown on.
  return j.dump(1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) + "\n";
}

std::vector<Claim> ClaimLedger::prune(const std::function<bool(const ProcessId&)>& is_alive) {
  std::vector<Claim> dead;
  auto it = std::stable_partition(claims.begin(), claims.end(), [&](const Claim& c) { return is_alive(c.owner); });
  dead.assign(std::make_move_iterator(it), std::make_move_iterator(claims.end()));
  claims.erase(it, claims.end());
  return dead;
}

const Claim* ClaimLedger::envelope_of(const std::vector<ProcessId>& lineage) const {
  for (const ProcessId& member : lineage) {
    for (const auto& c : claims) {
      if (c.envelope && c.owner == member) return &c;
    }
  }
  return nullptr;
}

CpuUsage ClaimLedger::usage_for(const std::vector<ProcessId>& lineage) const {
  CpuUsage usage;
  for (const auto& c : claims) {
    if (c.envelope && std::find(lineage.begin(), lineage.end(), c.owner) != lineage.end()) continue;
    if (c.exclusive) {
      usage.exclusive = usage.exclusive | c.cpus;
    } else {
      for (int cpu : c.cpus.to_vector()) ++usage.shared_load[cpu];
    }
    usage.gpus.add(c.gpus, c.gpus_exclusive, +1);
  }
  return usage;
}

uint64_t ClaimLedger::add(Claim claim) {
  claim.id = next_id++;
  claims.push_back(std::move(claim));
  return claims.back().id;
}

bool ClaimLedger::remove(uint64_t id) {
  auto it = std::find_if(claims.begin(), claims.end(), [&](const Claim& c) { return c.id == id; });
  if (it == claims.end()) return false;
  claims.erase(it);
  return true;
}

const Claim* ClaimLedger::find(uint64_t id) const {
  for (const auto& c : claims) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

}  // namespace mlos
