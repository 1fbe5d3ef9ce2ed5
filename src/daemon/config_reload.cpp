// SPDX-License-Identifier: Apache-2.0
#include "daemon/config_reload.h"

#include <algorithm>

namespace mlos::daemon {

const std::vector<std::string> kReloadableKeys = {"quotas",         "memory_pressure", "stay_in_cgroups",
                                                  "confine_group",  "max_clients",     "client_idle_timeout_ms",
                                                  "policies.defaults"};

namespace {

bool reloadable(const std::string& key) {
  return std::find(kReloadableKeys.begin(), kReloadableKeys.end(), key) != kReloadableKeys.end();
}

}  // namespace

ReloadPlan plan_reload(const DaemonConfig& running, const DaemonConfig& fresh) {
  ReloadPlan plan{running, {}, {}};
  // Compared in the file's format, key by key ("policies" by its own
  // keys), so every key is judged without listing them twice.
  const nlohmann::json was = running.to_json(), now = fresh.to_json();
  for (const auto& [key, value] : now.items()) {
    if (key == "policies") {
      for (const auto& [sub, v] : value.items()) {
        if (was[key].value(sub, nlohmann::json()) == v) continue;
        const std::string name = "policies." + sub;
        (reloadable(name) ? plan.applied : plan.need_restart).push_back(name);
      }
    } else if (was.value(key, nlohmann::json()) != value) {
      (reloadable(key) ? plan.applied : plan.need_restart).push_back(key);
    }
  }
  plan.next.quotas = fresh.quotas;
  plan.next.memory_thresholds = fresh.memory_thresholds;
  plan.next.stay_in_cgroups = fresh.stay_in_cgroups;
  plan.next.confine_group = fresh.confine_group;
  plan.next.max_clients = fresh.max_clients;
  plan.next.client_idle_timeout_ms = fresh.client_idle_timeout_ms;
  plan.next.policies.defaults = fresh.policies.defaults;
  return plan;
}

}  // namespace mlos::daemon
