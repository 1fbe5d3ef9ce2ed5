// SPDX-License-Identifier: Apache-2.0
#include "daemon/daemon_config.h"

#include <fstream>
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

}  // namespace

Status DaemonConfig::merge(const json& c, std::string* refused_key) {
  auto read_key = [](DaemonConfig& next, const std::string& key, const json& v) -> Status {
    if (key == "socket") {
      next.socket = str(v, "socket");
      if (next.socket.empty() || next.socket[0] != '/') throw std::invalid_argument("socket must be an absolute path");
    } else if (key == "socket_mode") {
      const std::string m = str(v, "socket_mode");
      const bool octal = !m.empty() && m.size() <= 4 && m.find_first_not_of("01234567") == std::string::npos;
      const unsigned long mode = octal ? std::stoul(m, nullptr, 8) : 010000;
      if (mode > 0777) throw std::invalid_argument("socket_mode must be octal like \"0660\"");
      next.socket_mode = static_cast<mode_t>(mode);
    } else if (key == "state_dir") {
      next.state_dir = str(v, "state_dir");
      if (next.state_dir.empty() || next.state_dir[0] != '/') throw std::invalid_argument("state_dir must be absolute");
    } else if (key == "cgroups") {
      next.cgroups = str(v, "cgroups");
      if (!std::set<std::string>{"auto", "v1", "v2", "none"}.count(next.cgroups)) {
        throw std::invalid_argument("cgroups must be auto, v1, v2 or none");
      }
    } else if (key == "confine") {
      next.confine_cgroups.clear();
      if (v.is_string()) {
        next.confine = v.get<std::string>();
        if (next.confine != "node" && next.confine != "off") {
          throw std::invalid_argument("confine must be \"node\", \"off\" or a list of cgroups");
        }
      } else if (v.is_array() && !v.empty()) {
        next.confine = "list";
        for (const auto& e : v) {
          next.confine_cgroups.push_back(relative_cgroup(e, "confine"));
        }
      } else {
        throw std::invalid_argument("confine must be \"node\", \"off\" or a non-empty list of cgroups");
      }
    } else if (key == "stay_in_cgroups") {
      if (!v.is_array()) throw std::invalid_argument("stay_in_cgroups must be a list of cgroups");
      next.stay_in_cgroups.clear();
      for (const auto& e : v) {
        next.stay_in_cgroups.push_back(relative_cgroup(e, "stay_in_cgroups"));
      }
    } else if (key == "node_cpus") {
      next.node_cpus = str(v, "node_cpus");
      if (next.node_cpus != "affinity" && next.node_cpus != "root-cgroup") {
        throw std::invalid_argument("node_cpus must be \"affinity\" or \"root-cgroup\"");
      }
    } else if (key == "confine_group") {
      next.confine_group = str(v, "confine_group");
    } else if (key == "ledger_dir") {
      next.ledger_dir = str(v, "ledger_dir");
      if (!next.ledger_dir.empty() && next.ledger_dir[0] != '/') {
        throw std::invalid_argument("ledger_dir must be absolute or \"\"");
      }
    } else if (key == "cgroup_base") {
      // The same rule as the lists of cgroups: "mlos/" or "a//b" would
      // name job cgroups "mlos//job-1".
      next.cgroup_base = str(v, "cgroup_base");
      const std::string& b = next.cgroup_base;
      if (b.empty() || b.front() == '/' || b.back() == '/' || b.find("..") != std::string::npos ||
          b.find("//") != std::string::npos || b == "." || b.rfind("./", 0) == 0 ||
          b.find("/./") != std::string::npos) {
        throw std::invalid_argument("cgroup_base must be a relative cgroup path without '..', '.', '//' or a trailing '/'");
      }
    } else if (key == "log") {
      next.log = str(v, "log");
      if (next.log != "auto" && next.log != "journal" && next.log != "stderr") {
        throw std::invalid_argument("log must be \"auto\", \"journal\" or \"stderr\"");
      }
    } else if (key == "metrics_listen") {
      next.metrics_listen = str(v, "metrics_listen");
      if (!next.metrics_listen.empty()) {
        if (auto a = parse_listen_address(next.metrics_listen); !a) throw std::invalid_argument(a.error().message);
      }
    } else if (key == "metrics_textfile") {
      next.metrics_textfile = str(v, "metrics_textfile");
      if (!next.metrics_textfile.empty() && next.metrics_textfile[0] != '/') {
        throw std::invalid_argument("metrics_textfile must be absolute or \"\"");
      }
    } else if (key == "sample_interval_ms") {
      next.sample_interval_ms = int_in_range(v, "sample_interval_ms", 10, 60000);
    } else if (key == "metrics_interval_ms") {
      next.metrics_interval_ms = int_in_range(v, "metrics_interval_ms", 100, 600000);
    } else if (key == "max_clients") {
      next.max_clients = int_in_range(v, "max_clients", 1, 65536);
    } else if (key == "client_idle_timeout_ms") {
      next.client_idle_timeout_ms = int_in_range(v, "client_idle_timeout_ms", 100, 86400000);
    } else if (key == "quotas") {
      if (Status s = next.quotas.merge(v); !s) return make_error(MLOS_ERR_INVALID_ARGUMENT, s.error().message);
    } else if (key == "arbitration") {
      auto policy = PhaseWeights::from_json(v);
      if (!policy) return make_error(MLOS_ERR_INVALID_ARGUMENT, "arbitration: " + policy.error().message);
      next.policy = *policy;
      next.arbitration = v;
    } else if (key == "policies") {
      if (Status s = next.policies.merge(v); !s) return make_error(MLOS_ERR_INVALID_ARGUMENT, s.error().message);
    } else if (key == "memory_pressure") {
      auto t = thresholds_from_json(v, MemoryThresholds{});
      if (!t) return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory_pressure: " + t.error().message);
      next.memory_thresholds = *t;
    } else {
      throw std::invalid_argument("unknown key '" + key + "'");
    }
    return Status::Ok();
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
