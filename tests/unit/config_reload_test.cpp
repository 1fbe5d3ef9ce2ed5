// SPDX-License-Identifier: Apache-2.0
// plan_reload: what a reload applies and what waits for a restart.
#include "daemon/config_reload.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

using nlohmann::json;

DaemonConfig config(const json& keys) {
  DaemonConfig c;
  Status s = c.merge(keys);
  EXPECT_TRUE(s.ok()) << s.error().describe();
  return c;
}

TEST(ConfigReloadTest, NothingChangedChangesNothing) {
  const DaemonConfig c = config({{"max_clients", 9}});
  const ReloadPlan plan = plan_reload(c, c);
  EXPECT_TRUE(plan.applied.empty());
  EXPECT_TRUE(plan.need_restart.empty());
  EXPECT_EQ(plan.next.to_json(), c.to_json());
}

TEST(ConfigReloadTest, ReloadableKeysApply) {
  const DaemonConfig running = config(json::object());
  const DaemonConfig fresh = config({{"quotas", {{"jobs_per_uid", 3}}},
                                     {"max_clients", 7},
                                     {"client_idle_timeout_ms", 5000},
                                     {"confine_group", "trainers"},
                                     {"stay_in_cgroups", {"batch.slice"}},
                                     {"memory_pressure", {{"hold_ms", 3000}}},
                                     {"policies", {{"defaults", {"thread-governor"}}}}});
  const ReloadPlan plan = plan_reload(running, fresh);
  EXPECT_TRUE(plan.need_restart.empty());
  EXPECT_EQ(plan.applied.size(), 7u);
  EXPECT_EQ(plan.next.to_json(), fresh.to_json());
}

TEST(ConfigReloadTest, RestartOnlyKeysKeepTheirRunningValuesAndAreNamed) {
  const DaemonConfig running = config(json::object());
  const DaemonConfig fresh = config({{"socket", "/run/other.sock"},
                                     {"sample_interval_ms", 50},
                                     {"max_clients", 5},
                                     {"policies", {{"host", "/opt/other-host"}, {"defaults", json::array()}}}});
  const ReloadPlan plan = plan_reload(running, fresh);
  EXPECT_EQ(plan.next.socket, running.socket);
  EXPECT_EQ(plan.next.sample_interval_ms, running.sample_interval_ms);
  EXPECT_EQ(plan.next.policies.host, running.policies.host);
  EXPECT_EQ(plan.next.max_clients, 5);
  EXPECT_TRUE(plan.next.policies.defaults.empty());
  const std::vector<std::string> applied{"max_clients", "policies.defaults"};
  const std::vector<std::string> restart{"policies.host", "sample_interval_ms", "socket"};
  EXPECT_EQ(plan.applied, applied);
  EXPECT_EQ(plan.need_restart, restart);
}

TEST(ConfigReloadTest, EveryReloadableKeyIsAConfigKey) {
  // A key renamed in the config but not here would silently stop applying.
  const json keys = DaemonConfig().to_json();
  for (const std::string& key : kReloadableKeys) {
    const auto dot = key.find('.');
    if (dot == std::string::npos) {
      EXPECT_TRUE(keys.contains(key)) << key;
    } else {
      EXPECT_TRUE(keys[key.substr(0, dot)].contains(key.substr(dot + 1))) << key;
    }
  }
}

}  // namespace
}  // namespace mlos::daemon
