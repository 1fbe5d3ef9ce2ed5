// SPDX-License-Identifier: Apache-2.0
// mlosd's configuration (daemon/daemon_config): defaults, merging a JSON
// config, rejecting a bad one whole, reading it from a file, and printing
// the effective configuration back in the file's format.
#include "daemon/daemon_config.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace mlos::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A config that differs from the defaults everywhere.
json full_config() {
  return json{{"socket", "/tmp/mlos-test/mlosd.sock"},
              {"socket_mode", "0660"},
              {"state_dir", "/tmp/mlos-test/state"},
              {"cgroups", "v2"},
              {"cgroup_base", "system.slice/mlos"},
              {"ledger_dir", "/tmp/mlos-test/run"},
              {"confine", {"system.slice", "user.slice"}},
              {"confine_group", "trainers"},
              {"stay_in_cgroups", {"kubepods.slice", "batch.slice/jobs"}},
              {"node_cpus", "root-cgroup"},
              {"log", "journal"},
              {"metrics_listen", ""},
              {"metrics_textfile", "/var/lib/node_exporter/mlos.prom"},
              {"sample_interval_ms", 50},
              {"metrics_interval_ms", 5000},
              {"max_clients", 16},
              {"client_idle_timeout_ms", 30000},
              {"quotas",
               {{"connections_per_uid", 4},
                {"jobs_per_uid", 100},
                {"exclusive_cpus_per_uid", 2},
                {"exclusive_gpus_per_uid", 1},
                {"memory_bytes_per_uid", 1 << 30},
                {"root_reserved_connections", 2}}},
              {"arbitration", {{"phase_weights", {{"BACKWARD", 300}, {"IDLE", 1}}}}},
              {"memory_pressure",
               {{"moderate_headroom_percent", 25.0},
                {"critical_headroom_percent", 10.0},
                {"moderate_psi_some", 20.0},
                {"critical_psi_full", 8.0},
                {"hysteresis_percent", 4.0},
                {"hold_ms", 2000},
                {"sample_ms", 200},
                {"psi_trigger_stall_ms", 300},
                {"psi_trigger_window_ms", 4000}}},
              {"policies",
               {{"enabled", true},
                {"dir", "/opt/mlos/policies"},
                {"host", "/opt/mlos/libexec/mlos-policyhost"},
                {"defaults", {"thread-governor"}},
                {"config", {{"example", json::object()}}},
                {"tick_interval_ms", {{"thread-governor", 250}}},
                {"user", "mlos-policy"},
                {"deadline_ms", 500},
                {"start_deadline_ms", 3000},
                {"unload_grace_ms", 1000},
                {"memory_limit_bytes", 64u << 20}}}};
}

TEST(DaemonConfigTest, Defaults) {
  const DaemonConfig c;
  EXPECT_EQ(c.socket, "/run/mlos/mlosd.sock");
  EXPECT_EQ(c.socket_mode, 0666u);
  EXPECT_EQ(c.state_dir, "/var/lib/mlos");
  EXPECT_EQ(c.cgroups, "auto");
  EXPECT_EQ(c.cgroup_base, "mlos");
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(c.metrics_textfile, "");
  EXPECT_EQ(c.sample_interval_ms, 100);
  EXPECT_EQ(c.metrics_interval_ms, 1000);
  EXPECT_EQ(c.max_clients, 1024);
  EXPECT_EQ(c.policy.weight(MLOS_TRAINING_PHASE_BACKWARD, 0), 200u);
  EXPECT_EQ(c.policy.weight(MLOS_TRAINING_PHASE_CHECKPOINT, 0), 400u);
  EXPECT_EQ(c.arbitration, json::object());
}

TEST(DaemonConfigTest, MergeOfAFullConfigSetsEveryField) {
  DaemonConfig c;
  Status s = c.merge(full_config());
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(c.socket, "/tmp/mlos-test/mlosd.sock");
  EXPECT_EQ(c.socket_mode, 0660u);
  EXPECT_EQ(c.state_dir, "/tmp/mlos-test/state");
  EXPECT_EQ(c.cgroups, "v2");
  EXPECT_EQ(c.cgroup_base, "system.slice/mlos");
  EXPECT_EQ(c.ledger_dir, "/tmp/mlos-test/run");
  EXPECT_EQ(c.confine, "list");
  EXPECT_EQ(c.confine_cgroups, (std::vector<std::string>{"system.slice", "user.slice"}));
  EXPECT_EQ(c.confine_group, "trainers");
  EXPECT_EQ(c.stay_in_cgroups, (std::vector<std::string>{"kubepods.slice", "batch.slice/jobs"}));
  EXPECT_EQ(c.node_cpus, "root-cgroup");
  EXPECT_EQ(c.metrics_listen, "");
  EXPECT_EQ(c.metrics_textfile, "/var/lib/node_exporter/mlos.prom");
  EXPECT_EQ(c.sample_interval_ms, 50);
  EXPECT_EQ(c.metrics_interval_ms, 5000);
  EXPECT_EQ(c.max_clients, 16);
  EXPECT_EQ(c.policy.weight(MLOS_TRAINING_PHASE_BACKWARD, 0), 300u);
  EXPECT_EQ(c.policy.weight(MLOS_TRAINING_PHASE_IDLE, 0), 1u);
  EXPECT_EQ(c.policy.weight(MLOS_TRAINING_PHASE_CHECKPOINT, 0), 400u) << "phases not named keep their default";
  EXPECT_EQ(c.arbitration, full_config()["arbitration"]);
  EXPECT_DOUBLE_EQ(c.memory_thresholds.moderate_headroom, 0.25);
  EXPECT_DOUBLE_EQ(c.memory_thresholds.critical_headroom, 0.10);
  EXPECT_EQ(c.memory_thresholds.hold_ms, 2000u);
  EXPECT_EQ(c.memory_thresholds.psi_trigger_window_ms, 4000u);
}

TEST(DaemonConfigTest, PoliciesAreReadStrictly) {
  DaemonConfig c;
  ASSERT_TRUE(c.merge(full_config()).ok());
  EXPECT_EQ(c.policies.dir, "/opt/mlos/policies");
  EXPECT_EQ(c.policies.defaults, std::vector<std::string>{"thread-governor"});
  EXPECT_EQ(c.policies.deadline_ms, 500);
  EXPECT_EQ(c.policies.memory_limit_bytes, 64u << 20);
  for (const json& bad : {json{{"policies", {{"nope", 1}}}}, json{{"policies", {{"dir", "relative"}}}},
                          json{{"policies", {{"defaults", "phase-weights"}}}},
                          json{{"policies", {{"config", {{"example", 1}}}}}},
                          json{{"policies", {{"deadline_ms", 0}}}},
                          json{{"policies", {{"tick_interval_ms", {{"x", 1}}}}}},
                          json{{"policies", {{"memory_limit_bytes", 1024}}}}}) {
    DaemonConfig d;
    Status s = d.merge(bad);
    ASSERT_FALSE(s.ok()) << bad.dump();
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(s.error().message.find("policies"), std::string::npos) << s.error().message;
    EXPECT_EQ(d.policies.dir, DaemonConfig().policies.dir) << "nothing applied from a rejected config";
  }
}

TEST(DaemonConfigTest, MergeKeepsKeysNotGiven) {
  DaemonConfig c;
  ASSERT_TRUE(c.merge({{"max_clients", 8}}));
  ASSERT_TRUE(c.merge({{"socket", "/run/other.sock"}}));
  EXPECT_EQ(c.max_clients, 8);
  EXPECT_EQ(c.socket, "/run/other.sock");
  EXPECT_EQ(c.cgroups, "auto");
}

TEST(DaemonConfigTest, RootOnlyConnectionsAreValidButWarned) {
  DaemonConfig c;
  // The defaults' only warnings are about siblings of this binary that
  // failed the trust test: none in a root-owned checkout, some in one
  // under /tmp (install_location_test checks those).
  const std::vector<std::string> located = c.warnings();
  for (const std::string& w : located) EXPECT_NE(w.find(" is not used: "), std::string::npos) << w;
  ASSERT_TRUE(c.merge({{"max_clients", 8}}));  // the default reserve is 8
  ASSERT_EQ(c.warnings().size(), located.size() + 1);
  EXPECT_NE(c.warnings()[0].find("only root can connect"), std::string::npos) << c.warnings()[0];
  ASSERT_TRUE(c.merge({{"quotas", {{"root_reserved_connections", 7}}}}));
  EXPECT_EQ(c.warnings(), located);
}

// A bad config is refused as INVALID_ARGUMENT and changes nothing, not even
// the valid keys that come with it (which json orders before or after it).
class DaemonConfigRejectTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(config_.merge({{"socket", "/run/before.sock"}, {"max_clients", 3}})); }

  void expect_rejected(json bad, const std::string& names) {
    SCOPED_TRACE(bad.dump());
    const json before = config_.to_json();
    const uint32_t idle_before = config_.policy.weight(MLOS_TRAINING_PHASE_IDLE, 0);
    // Valid keys alongside the bad one, unless the bad one is among them.
    const json extras{{"arbitration", {{"phase_weights", {{"IDLE", 7}}}}},
                      {"cgroup_base", "valid/base"},
                      {"max_clients", 99},
                      {"state_dir", "/srv/mlos"}};
    for (const auto& [key, value] : extras.items()) {
      if (!bad.contains(key)) bad[key] = value;
    }
    Status s = config_.merge(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(s.error().message.find(names), std::string::npos) << s.error().message;
    EXPECT_EQ(config_.to_json(), before);
    EXPECT_EQ(config_.policy.weight(MLOS_TRAINING_PHASE_IDLE, 0), idle_before);
  }

  DaemonConfig config_;
};

TEST_F(DaemonConfigRejectTest, UnknownKey) { expect_rejected({{"verbose", true}}, "verbose"); }

TEST_F(DaemonConfigRejectTest, RelativeSocket) { expect_rejected({{"socket", "mlosd.sock"}}, "socket"); }

TEST_F(DaemonConfigRejectTest, SocketOfTheWrongType) { expect_rejected({{"socket", 5}}, "socket"); }

TEST_F(DaemonConfigRejectTest, SocketModeOutOfRange) { expect_rejected({{"socket_mode", "999"}}, "socket_mode"); }

TEST_F(DaemonConfigRejectTest, SocketModeNotOctal) { expect_rejected({{"socket_mode", "abc"}}, "socket_mode"); }

TEST_F(DaemonConfigRejectTest, SocketModeWithTrailingGarbage) {
  expect_rejected({{"socket_mode", "0660x"}}, "socket_mode");
}

TEST_F(DaemonConfigRejectTest, SocketModeTooLarge) { expect_rejected({{"socket_mode", "01777"}}, "socket_mode"); }

TEST_F(DaemonConfigRejectTest, SocketModeAsNumber) { expect_rejected({{"socket_mode", 438}}, "socket_mode"); }

TEST_F(DaemonConfigRejectTest, UnknownCgroupVersion) { expect_rejected({{"cgroups", "v3"}}, "cgroups"); }

TEST_F(DaemonConfigRejectTest, CgroupBaseEscapingUpwards) {
  expect_rejected({{"cgroup_base", "mlos/../../etc"}}, "cgroup_base");
}

TEST_F(DaemonConfigRejectTest, ConfineOtherThanNodeOffOrAList) {
  expect_rejected({{"confine", "all"}}, "confine");
  expect_rejected({{"confine", nlohmann::json::array()}}, "confine");
  expect_rejected({{"confine", {"../etc"}}}, "confine");
  expect_rejected({{"confine", {"/system.slice"}}}, "confine");
}
TEST_F(DaemonConfigRejectTest, StayInCgroupsOtherThanAListOfRelativePaths) {
  expect_rejected({{"stay_in_cgroups", "kubepods"}}, "stay_in_cgroups");
  expect_rejected({{"stay_in_cgroups", {"/kubepods"}}}, "stay_in_cgroups");
  expect_rejected({{"stay_in_cgroups", {"kubepods/../x"}}}, "stay_in_cgroups");
  expect_rejected({{"stay_in_cgroups", {""}}}, "stay_in_cgroups");
}
TEST_F(DaemonConfigRejectTest, NodeCpusOtherThanAffinityOrRootCgroup) {
  expect_rejected({{"node_cpus", "all"}}, "node_cpus");
  expect_rejected({{"node_cpus", 4}}, "node_cpus");
}
TEST_F(DaemonConfigRejectTest, RelativeLedgerDir) { expect_rejected({{"ledger_dir", "run/mlos"}}, "ledger_dir"); }
TEST_F(DaemonConfigRejectTest, AbsoluteCgroupBase) { expect_rejected({{"cgroup_base", "/mlos"}}, "cgroup_base"); }

TEST_F(DaemonConfigRejectTest, ZeroSampleInterval) {
  expect_rejected({{"sample_interval_ms", 0}}, "sample_interval_ms");
}

TEST_F(DaemonConfigRejectTest, FractionalSampleInterval) {
  expect_rejected({{"sample_interval_ms", 100.5}}, "sample_interval_ms");
}

TEST_F(DaemonConfigRejectTest, HugeMaxClientsDoesNotWrap) {
  expect_rejected({{"max_clients", (uint64_t{1} << 32) + 8}}, "max_clients");
}

TEST_F(DaemonConfigRejectTest, MetricsListenTypo) {
  expect_rejected({{"metrics_listen", "127.0.0.1:99999"}}, "metrics_listen");
  expect_rejected({{"metrics_listen", "http://localhost:9464"}}, "metrics_listen");
}

TEST_F(DaemonConfigRejectTest, MemoryQuotaPastUint64) {
  // 2^64 parses as a double: said to be out of range, not negative.
  expect_rejected(json::parse(R"({"quotas": {"memory_bytes_per_uid": 18446744073709551616}})"), "2^64-1");
}

TEST_F(DaemonConfigRejectTest, RelativeStateDir) { expect_rejected({{"state_dir", "state"}}, "state_dir"); }

TEST_F(DaemonConfigRejectTest, ArbitrationWithUnknownPhase) {
  expect_rejected({{"arbitration", {{"phase_weights", {{"WARMUP", 50}}}}}}, "WARMUP");
}

TEST_F(DaemonConfigRejectTest, ArbitrationWeightOutOfRange) {
  expect_rejected({{"arbitration", {{"phase_weights", {{"FORWARD", 0}}}}}}, "FORWARD");
}

TEST_F(DaemonConfigRejectTest, MemoryPressureUnknownKey) {
  expect_rejected({{"memory_pressure", {{"moderate", 20}}}}, "moderate");
}

TEST_F(DaemonConfigRejectTest, MemoryPressureInverted) {
  expect_rejected({{"memory_pressure", {{"critical_headroom_percent", 30}}}}, "critical headroom");
}

TEST_F(DaemonConfigRejectTest, MemoryPressureWrongType) {
  expect_rejected({{"memory_pressure", {{"hold_ms", "1s"}}}}, "hold_ms");
}

TEST(DaemonConfigTest, NonObjectIsRejected) {
  DaemonConfig c;
  Status s = c.merge(json::array({1, 2}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
}

class DaemonConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-daemoncfg-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& text) {
    const std::string path = (dir_ / "mlosd.json").string();
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(DaemonConfigFileTest, ReadsAValidFile) {
  auto c = DaemonConfig::from_file(write(full_config().dump(2)));
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->to_json(), full_config());
}

TEST_F(DaemonConfigFileTest, MissingFileIsInvalidArgumentNamingIt) {
  const std::string path = (dir_ / "absent.json").string();
  auto c = DaemonConfig::from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.error().sys_errno, ENOENT);
  EXPECT_NE(c.error().message.find(path), std::string::npos) << c.error().message;
}

TEST_F(DaemonConfigFileTest, InvalidJsonIsInvalidArgumentNamingTheFile) {
  const std::string path = write("{\"socket\": \"/run/x.sock\",");
  auto c = DaemonConfig::from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(c.error().message.find(path), std::string::npos) << c.error().message;
}

TEST_F(DaemonConfigFileTest, InvalidValueInFileNamesFileAndKey) {
  const std::string path = write(R"({"cgroups": "v3"})");
  auto c = DaemonConfig::from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(c.error().message.find(path), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("cgroups"), std::string::npos) << c.error().message;
}

TEST_F(DaemonConfigFileTest, CommentsAreAllowed) {
  const std::string path = write("// mlosd on this node\n{\n  /* tests */ \"cgroups\": \"none\", // no cgroups\n"
                                 "  \"log\": \"stderr\"\n}\n");
  auto c = DaemonConfig::from_file(path);
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->cgroups, "none");
  EXPECT_EQ(c->log, "stderr");
}

TEST_F(DaemonConfigFileTest, SyntaxErrorSaysLineAndColumn) {
  // Line 3, column 14: the stray comma's successor, '}'.
  const std::string path = write("{\n  \"cgroups\": \"none\",\n  \"log\": \"x\",}\n");
  auto c = DaemonConfig::from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.error().message.rfind(path + ":3:14: ", 0), 0u) << c.error().message;
}

TEST_F(DaemonConfigFileTest, RefusedValueSaysWhereItsKeyIs) {
  const std::string path = write("{\n  \"socket\": \"/run/x.sock\",\n\n    \"quotas\": {\"jobs_per_uid\": -1}\n}\n");
  auto c = DaemonConfig::from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind(path + ":4:5: ", 0), 0u) << c.error().message;
  EXPECT_NE(c.error().message.find("jobs_per_uid"), std::string::npos) << c.error().message;
}

TEST_F(DaemonConfigFileTest, UnknownKeySaysWhereItIs) {
  const std::string path = write("{\"cgroups\": \"none\", \"sockte\": \"/run/x\"}");
  auto c = DaemonConfig::from_file(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind(path + ":1:21: ", 0), 0u) << c.error().message;
  EXPECT_NE(c.error().message.find("sockte"), std::string::npos) << c.error().message;
}

TEST_F(DaemonConfigRejectTest, LogTarget) { expect_rejected({{"log", "syslog"}}, "log"); }

TEST_F(DaemonConfigRejectTest, CgroupBaseThatWouldDoubleSlashesOrStayPut) {
  for (const char* base : {"mlos/", "a//b", ".", "./mlos", "a/./b"}) expect_rejected({{"cgroup_base", base}}, "cgroup_base");
}

TEST_F(DaemonConfigRejectTest, RelativeMetricsTextfile) {
  expect_rejected({{"metrics_textfile", "mlos.prom"}}, "metrics_textfile");
}

TEST(DaemonConfigTest, ToJsonRoundTripsThroughMerge) {
  DaemonConfig original;
  ASSERT_TRUE(original.merge(full_config()));
  DaemonConfig copy;
  Status s = copy.merge(original.to_json());
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(copy.to_json(), original.to_json());
  EXPECT_EQ(copy.socket_mode, 0660u);
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    const auto phase = static_cast<mlos_training_phase_t>(p);
    EXPECT_EQ(copy.policy.weight(phase, 3), original.policy.weight(phase, 3)) << p;
  }
}

TEST(DaemonConfigTest, DefaultsRoundTripThroughMerge) {
  const DaemonConfig defaults;
  EXPECT_EQ(defaults.to_json()["socket_mode"], "0666");
  DaemonConfig copy;
  ASSERT_TRUE(copy.merge(defaults.to_json()));
  EXPECT_EQ(copy.to_json(), defaults.to_json());
}

}  // namespace
}  // namespace mlos::daemon
