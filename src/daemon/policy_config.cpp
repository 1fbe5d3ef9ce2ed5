// SPDX-License-Identifier: Apache-2.0
#include "daemon/policy_config.h"

#include <stdexcept>

#include "core/config_section.h"
#include "core/json_fields.h"
#include "os/install_location.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

std::string absolute_path(const json& v, const std::string& key) {
  if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>()[0] != '/') {
    throw std::invalid_argument("policies." + key + " must be an absolute path");
  }
  return v.get<std::string>();
}

}  // namespace

const DaemonPolicyPaths& daemon_policy_paths() {
  static const DaemonPolicyPaths paths = [] {
    DaemonPolicyPaths p;
    std::string note;
    p.dir = os::locate_trusted_install_part(InstallPart::kPolicyDir, &note);
    if (!note.empty()) p.notes.push_back(note);
    p.host = os::locate_trusted_install_part(InstallPart::kPolicyHost, &note);
    if (!note.empty()) p.notes.push_back(note);
    return p;
  }();
  return paths;
}

DaemonPolicyConfig::DaemonPolicyConfig() : dir(daemon_policy_paths().dir), host(daemon_policy_paths().host) {}

Status DaemonPolicyConfig::merge(const json& c) {
  auto read_key = [](DaemonPolicyConfig& next, const std::string& key, const json& v) -> Status {
    if (key == "enabled") {
      if (!v.is_boolean()) throw std::invalid_argument("policies.enabled must be true or false");
      next.enabled = v.get<bool>();
    } else if (key == "dir") {
      next.dir = absolute_path(v, key);
    } else if (key == "host") {
      next.host = absolute_path(v, key);
    } else if (key == "defaults") {
      if (!v.is_array()) throw std::invalid_argument("policies.defaults must be a list of policy names");
      next.defaults.clear();
      for (const json& n : v) {
        if (!n.is_string()) throw std::invalid_argument("policies.defaults must be a list of policy names");
        next.defaults.push_back(n.get<std::string>());
      }
    } else if (key == "config") {
      if (!v.is_object()) throw std::invalid_argument("policies.config must be an object of policy -> config");
      for (const auto& [name, cfg] : v.items()) {
        if (!cfg.is_object()) throw std::invalid_argument("policies.config." + name + " must be an object");
      }
      next.config = v;
    } else if (key == "tick_interval_ms") {
      if (!v.is_object()) throw std::invalid_argument("policies.tick_interval_ms must be an object of policy -> ms");
      next.tick_interval_ms.clear();
      for (const auto& [name, ms] : v.items()) {
        next.tick_interval_ms[name] =
            static_cast<uint32_t>(int_in_range(ms, "policies.tick_interval_ms." + name, 10, 3600000));
      }
    } else if (key == "user") {
      if (!v.is_string() || v.get<std::string>().empty()) throw std::invalid_argument("policies.user must be a user name");
      next.user = v.get<std::string>();
    } else if (key == "deadline_ms") {
      next.deadline_ms = int_in_range(v, "policies.deadline_ms", 10, 600000);
    } else if (key == "start_deadline_ms") {
      next.start_deadline_ms = int_in_range(v, "policies.start_deadline_ms", 100, 600000);
    } else if (key == "unload_grace_ms") {
      next.unload_grace_ms = int_in_range(v, "policies.unload_grace_ms", 0, 86400000);
    } else if (key == "memory_limit_bytes") {
      if (!is_non_negative_integer(v) || v.get<uint64_t>() < (16ull << 20)) {
        throw std::invalid_argument("policies.memory_limit_bytes must be an integer >= 16 MiB");
      }
      next.memory_limit_bytes = v.get<uint64_t>();
    } else {
      throw std::invalid_argument("unknown key 'policies." + key + "'");
    }
    return Status::Ok();
  };
  return merge_config_section(*this, c, "policies must be an object", "", read_key);
}

json DaemonPolicyConfig::to_json() const {
  return json{{"enabled", enabled},         {"dir", dir},
              {"host", host},               {"defaults", defaults},
              {"config", config},           {"tick_interval_ms", tick_interval_ms},
              {"user", user},
              {"deadline_ms", deadline_ms}, {"start_deadline_ms", start_deadline_ms},
              {"unload_grace_ms", unload_grace_ms}, {"memory_limit_bytes", memory_limit_bytes}};
}

}  // namespace mlos::daemon
