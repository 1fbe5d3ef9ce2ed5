// SPDX-License-Identifier: Apache-2.0
#include "daemon/daemon_config.h"

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/config_section.h"
#include "core/json_fields.h"
#include "core/located_json.h"
#include "core/memory_pressure_json.h"
#include "daemon/listen_address.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

std::string str(const json& j, const char* key) {
  if (!j.is_string()) throw std::invalid_argument(std::string(key) + " must be a string");
  return j.get<std::string>();
}

// An element of list `key` that must name a cgroup by a relative path
// ("system.slice", "kubepods.slice/x"): std::invalid_argument otherwise.
std::string relative_cgroup(const json& e, const std::string& key) {
  const std::string cg = str(e, (key + "[]").c_str());
  if (cg.empty() || cg.front() == '/' || cg.back() == '/' || cg.find("..") != std::string::npos ||
      cg.find("//") != std::string::npos) {
    throw std::invalid_argument(key + ": \"" + cg + "\" is not a relative cgroup path without '..'");
  }
  return cg;
}

// How one key of the config is read into the next config: throws
// std::invalid_argument (what is wrong, the key named) or returns a
// refusal of a section's own reader.
using KeyReader = std::function<Status(DaemonConfig&, const json&)>;

// A string `field` that must be an absolute path (or "" if `may_be_empty`).
KeyReader absolute_path(std::string DaemonConfig::*field, const char* key, const char* message, bool may_be_empty) {
  return [=](DaemonConfig& next, const json& v) {
    std::string& path = next.*field = str(v, key);
    if (path.empty() ? !may_be_empty : path[0] != '/') throw std::invalid_argument(message);
    return Status::Ok();
  };
}

// A string `field` that must be one of `allowed`.
KeyReader one_of(std::string DaemonConfig::*field, const char* key, std::set<std::string> allowed, const char* message) {
  return [=](DaemonConfig& next, const json& v) {
    if (!allowed.count(next.*field = str(v, key))) throw std::invalid_argument(message);
    return Status::Ok();
  };
}

KeyReader int_between(int DaemonConfig::*field, const char* key, int lo, int hi) {
  return [=](DaemonConfig& next, const json& v) {
    next.*field = int_in_range(v, key, lo, hi);
    return Status::Ok();
  };
}

Status read_socket_mode(DaemonConfig& next, const json& v) {
  const std::string m = str(v, "socket_mode");
  const bool octal = !m.empty() && m.size() <= 4 && m.find_first_not_of("01234567") == std::string::npos;
  const unsigned long mode = octal ? std::stoul(m, nullptr, 8) : 010000;
  if (mode > 0777) throw std::invalid_argument("socket_mode must be octal like \"0660\"");
  next.socket_mode = static_cast<mode_t>(mode);
  return Status::Ok();
}

Status read_confine(DaemonConfig& next, const json& v) {
  next.confine_cgroups.clear();
  if (v.is_string()) {
    next.confine = v.get<std::string>();
    if (next.confine != "node" && next.confine != "off") {
      throw std::invalid_argument("confine must be \"node\", \"off\" or a list of cgroups");
    }
  } else if (v.is_array() && !v.empty()) {
    next.confine = "list";
    for (const auto& e : v) next.confine_cgroups.push_back(relative_cgroup(e, "confine"));
  } else {
    throw std::invalid_argument("confine must be \"node\", \"off\" or a non-empty list of cgroups");
  }
  return Status::Ok();
}

Status read_stay_in_cgroups(DaemonConfig& next, const json& v) {
  if (!v.is_array()) throw std::invalid_argument("stay_in_cgroups must be a list of cgroups");
  next.stay_in_cgroups.clear();
  for (const auto& e : v) next.stay_in_cgroups.push_back(relative_cgroup(e, "stay_in_cgroups"));
  return Status::Ok();
}

Status read_cgroup_base(DaemonConfig& next, const json& v) {
  // The same rule as the lists of cgroups: "mlos/" or "a//b" would name
  // job cgroups "mlos//job-1".
  next.cgroup_base = str(v, "cgroup_base");
  const std::string& b = next.cgroup_base;
  if (b.empty() || b.front() == '/' || b.back() == '/' || b.find("..") != std::string::npos ||
      b.find("//") != std::string::npos || b == "." || b.rfind("./", 0) == 0 || b.find("/./") != std::string::npos) {
    throw std::invalid_argument("cgroup_base must be a relative cgroup path without '..', '.', '//' or a trailing '/'");
  }
  return Status::Ok();
}

Status read_metrics_listen(DaemonConfig& next, const json& v) {
  next.metrics_listen = str(v, "metrics_listen");
  if (!next.metrics_listen.empty()) {
    if (auto a = parse_listen_address(next.metrics_listen); !a) throw std::invalid_argument(a.error().message);
  }
  return Status::Ok();
}

Status read_arbitration(DaemonConfig& next, const json& v) {
  auto policy = PhaseWeights::from_json(v);
  if (!policy) return make_error(MLOS_ERR_INVALID_ARGUMENT, "arbitration: " + policy.error().message);
  next.policy = *policy;
  next.arbitration = v;
  return Status::Ok();
}

Status read_memory_pressure(DaemonConfig& next, const json& v) {
  auto t = thresholds_from_json(v, MemoryThresholds{});
  if (!t) return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory_pressure: " + t.error().message);
  next.memory_thresholds = *t;
  return Status::Ok();
}

// A section with a merge() of its own (quotas, policies): its refusal as
// INVALID_ARGUMENT.
template <class Section>
KeyReader section(Section DaemonConfig::*field) {
  return [=](DaemonConfig& next, const json& v) -> Status {
    if (Status s = (next.*field).merge(v); !s) return make_error(MLOS_ERR_INVALID_ARGUMENT, s.error().message);
    return Status::Ok();
  };
}

// Every key of mlosd's config file (docs/daemon.md; packaging/mlosd.schema.json).
const std::map<std::string, KeyReader>& config_keys() {
  using C = DaemonConfig;
  static const std::map<std::string, KeyReader> keys = {
      {"socket", absolute_path(&C::socket, "socket", "socket must be an absolute path", false)},
      {"socket_mode", read_socket_mode},
      {"state_dir", absolute_path(&C::state_dir, "state_dir", "state_dir must be absolute", false)},
      {"cgroups", one_of(&C::cgroups, "cgroups", {"auto", "v1", "v2", "none"}, "cgroups must be auto, v1, v2 or none")},
      {"confine", read_confine},
      {"stay_in_cgroups", read_stay_in_cgroups},
      {"node_cpus", one_of(&C::node_cpus, "node_cpus", {"affinity", "root-cgroup"},
                           "node_cpus must be \"affinity\" or \"root-cgroup\"")},
      {"confine_group",
       [](C& next, const json& v) {
         next.confine_group = str(v, "confine_group");
         return Status::Ok();
       }},
      {"ledger_dir", absolute_path(&C::ledger_dir, "ledger_dir", "ledger_dir must be absolute or \"\"", true)},
      {"cgroup_base", read_cgroup_base},
      {"log", one_of(&C::log, "log", {"auto", "journal", "stderr"}, "log must be \"auto\", \"journal\" or \"stderr\"")},
      {"metrics_listen", read_metrics_listen},
      {"metrics_textfile",
       absolute_path(&C::metrics_textfile, "metrics_textfile", "metrics_textfile must be absolute or \"\"", true)},
      {"sample_interval_ms", int_between(&C::sample_interval_ms, "sample_interval_ms", 10, 60000)},
      {"metrics_interval_ms", int_between(&C::metrics_interval_ms, "metrics_interval_ms", 100, 600000)},
      {"max_clients", int_between(&C::max_clients, "max_clients", 1, 65536)},
      {"client_idle_timeout_ms", int_between(&C::client_idle_timeout_ms, "client_idle_timeout_ms", 100, 86400000)},
      {"quotas", section(&C::quotas)},
      {"arbitration", read_arbitration},
      {"policies", section(&C::policies)},
      {"memory_pressure", read_memory_pressure},
  };
  return keys;
}

}  // namespace

Status DaemonConfig::merge(const json& c, std::string* refused_key) {
  auto read_key = [](DaemonConfig& next, const std::string& key, const json& v) -> Status {
    auto reader = config_keys().find(key);
    if (reader == config_keys().end()) throw std::invalid_argument("unknown key '" + key + "'");
    return reader->second(next, v);
  };
  return merge_config_section(*this, c, "mlosd config must be a JSON object", "mlosd config: ", read_key, refused_key);
}

Result<DaemonConfig> DaemonConfig::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_sys_error(errno, "cannot read mlosd config " + path, MLOS_ERR_INVALID_ARGUMENT);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_located_json(text.str());
  if (!parsed) return make_error(MLOS_ERR_INVALID_ARGUMENT, path + ":" + parsed.error().message);
  DaemonConfig c;
  std::string refused;
  if (Status s = c.merge(parsed->value, &refused); !s) {
    const std::string at = refused.empty() ? "" : parsed->where("/" + json_pointer_token(refused));
    return make_error(s.error().code, path + ":" + (at.empty() ? "" : at + ":") + " " + s.error().message);
  }
  return c;
}

std::vector<std::string> DaemonConfig::warnings() const {
  std::vector<std::string> out;
  if (quotas.root_reserved_connections >= max_clients) {
    out.push_back("quotas.root_reserved_connections (" + std::to_string(quotas.root_reserved_connections) +
                  ") is not below max_clients (" + std::to_string(max_clients) +
                  "): only root can connect to mlosd");
  }
  // A sibling of mlosd's binary that failed the trust test, while the
  // default it would have replaced is in use.
  const DaemonPolicyPaths& defaults = daemon_policy_paths();
  if (policies.dir == defaults.dir && policies.host == defaults.host) {
    for (const std::string& note : defaults.notes) out.push_back(note);
  }
  return out;
}

json DaemonConfig::to_json() const {
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(socket_mode));
  return json{{"socket", socket},
              {"socket_mode", mode},
              {"state_dir", state_dir},
              {"cgroups", cgroups},
              {"cgroup_base", cgroup_base},
              {"ledger_dir", ledger_dir},
              {"confine", confine == "list" ? json(confine_cgroups) : json(confine)},
              {"confine_group", confine_group},
              {"stay_in_cgroups", stay_in_cgroups},
              {"node_cpus", node_cpus},
              {"log", log},
              {"metrics_listen", metrics_listen},
              {"metrics_textfile", metrics_textfile},
              {"sample_interval_ms", sample_interval_ms},
              {"metrics_interval_ms", metrics_interval_ms},
              {"max_clients", max_clients},
              {"client_idle_timeout_ms", client_idle_timeout_ms},
              {"quotas", quotas.to_json()},
              {"arbitration", arbitration},
              {"memory_pressure", thresholds_to_json(memory_thresholds)},
              {"policies", policies.to_json()}};
}

}  // namespace mlos::daemon
