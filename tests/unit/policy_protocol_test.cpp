// SPDX-License-Identifier: Apache-2.0
// The policy host protocol (policy/policy_protocol.h): what one side
// writes the other reads back unchanged, and anything a well-behaved host
// would not send is refused, naming what is wrong.
#include "policy/policy_protocol.h"

#include <climits>
#include <cstring>
#include <functional>

#include <gtest/gtest.h>

namespace mlos::policy {
namespace {

using nlohmann::json;

mlos_policy_job_figures_t full_figures() {
  mlos_policy_job_figures_t f = empty_figures(42);
  f.now_seconds = 1234.5;
  f.phase = MLOS_TRAINING_PHASE_BACKWARD;
  f.priority = -3;
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    f.phase_seconds[p] = 0.25 * (p + 1);
    f.phase_entries[p] = 10u * static_cast<uint64_t>(p) + 1;
  }
  f.num_cpus = 8;
  std::strcpy(f.cpus, "0-3,8-11");
  f.cpus_truncated = 1;
  f.primary_node = 1;
  f.recommended_threads = 4;
  f.cpu_seconds = 99.5;
  f.owner_cpu_seconds = 42.25;
  f.cpus_busy_seconds = 400;
  f.memory_bytes = 3ull << 30;
  f.memory_limit_bytes = 8ull << 30;
  f.memory_known = 1;
  f.memory_pressure_level = 2;
  return f;
}

// Compared field by field: the struct has padding, so memcmp would not do.
void expect_same(const mlos_policy_job_figures_t& a, const mlos_policy_job_figures_t& b) {
  EXPECT_EQ(a.struct_size, b.struct_size);
  EXPECT_EQ(a.job, b.job);
  EXPECT_EQ(a.now_seconds, b.now_seconds);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.priority, b.priority);
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    EXPECT_EQ(a.phase_seconds[p], b.phase_seconds[p]);
    EXPECT_EQ(a.phase_entries[p], b.phase_entries[p]);
  }
  EXPECT_EQ(a.num_cpus, b.num_cpus);
  EXPECT_STREQ(a.cpus, b.cpus);
  EXPECT_EQ(a.cpus_truncated, b.cpus_truncated);
  EXPECT_EQ(a.primary_node, b.primary_node);
  EXPECT_EQ(a.recommended_threads, b.recommended_threads);
  EXPECT_EQ(a.cpu_seconds, b.cpu_seconds);
  EXPECT_EQ(a.owner_cpu_seconds, b.owner_cpu_seconds);
  EXPECT_EQ(a.cpus_busy_seconds, b.cpus_busy_seconds);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.memory_limit_bytes, b.memory_limit_bytes);
  EXPECT_EQ(a.memory_known, b.memory_known);
  EXPECT_EQ(a.memory_pressure_level, b.memory_pressure_level);
}

TEST(PolicyProtocolTest, FiguresRoundTrip) {
  for (const auto& f : {full_figures(), empty_figures(7)}) {
    // Through text, as on the wire.
    auto back = figures_from_json(json::parse(figures_to_json(f).dump()));
    ASSERT_TRUE(back.ok()) << back.error().message;
    expect_same(*back, f);
  }
}

TEST(PolicyProtocolTest, EmptyFiguresSayUnknown) {
  const auto f = empty_figures(9);
  EXPECT_EQ(f.struct_size, sizeof f);
  EXPECT_EQ(f.job, 9u);
  EXPECT_EQ(f.cpu_seconds, -1);
  EXPECT_EQ(f.owner_cpu_seconds, -1);
  EXPECT_EQ(f.cpus_busy_seconds, -1);
  EXPECT_EQ(f.primary_node, -1);
  EXPECT_EQ(f.memory_known, 0);
  EXPECT_EQ(f.memory_pressure_level, -1);
}

struct FiguresCase {
  const char* what;
  std::function<void(json&)> spoil;
};

TEST(PolicyProtocolTest, FiguresRefuseEachWrongField) {
  const std::vector<FiguresCase> cases = {
      {"no job", [](json& j) { j.erase("job"); }},
      {"negative job", [](json& j) { j["job"] = -1; }},
      {"now as a string", [](json& j) { j["now"] = "soon"; }},
      {"phase past the last", [](json& j) { j["phase"] = MLOS_TRAINING_PHASE_COUNT; }},
      {"phase negative", [](json& j) { j["phase"] = -1; }},
      {"priority too high", [](json& j) { j["priority"] = MLOS_PRIORITY_MAX + 1; }},
      {"priority a fraction", [](json& j) { j["priority"] = 0.5; }},
      {"phase_seconds short", [](json& j) { j["phase_seconds"].erase(0); }},
      {"phase_entries not an array", [](json& j) { j["phase_entries"] = 3; }},
      {"phase entry negative", [](json& j) { j["phase_entries"][2] = -5; }},
      {"phase seconds a string", [](json& j) { j["phase_seconds"][1] = "x"; }},
      {"num_cpus negative", [](json& j) { j["num_cpus"] = -1; }},
      {"cpus too long", [](json& j) { j["cpus"] = std::string(MLOS_POLICY_CPU_LIST_MAX, '1'); }},
      {"cpus a number", [](json& j) { j["cpus"] = 3; }},
      {"cpus_truncated a number", [](json& j) { j["cpus_truncated"] = 1; }},
      {"memory_known missing", [](json& j) { j.erase("memory_known"); }},
      {"primary_node below -1", [](json& j) { j["primary_node"] = -2; }},
      {"recommended_threads a string", [](json& j) { j["recommended_threads"] = "4"; }},
      {"cpu_seconds null", [](json& j) { j["cpu_seconds"] = nullptr; }},
      {"memory_bytes negative", [](json& j) { j["memory_bytes"] = -1; }},
      {"memory_limit_bytes a fraction", [](json& j) { j["memory_limit_bytes"] = 1.5; }},
      {"pressure level 3", [](json& j) { j["memory_pressure_level"] = 3; }},
      {"not an object", [](json& j) { j = json::array(); }},
  };
  for (const auto& c : cases) {
    json j = figures_to_json(full_figures());
    c.spoil(j);
    auto f = figures_from_json(j);
    ASSERT_FALSE(f.ok()) << c.what;
    EXPECT_EQ(f.error().code, MLOS_ERR_INVALID_ARGUMENT) << c.what;
    EXPECT_EQ(f.error().message.rfind("bad job figures: ", 0), 0u) << c.what << ": " << f.error().message;
  }
}

TEST(PolicyProtocolTest, FiguresAcceptTheLongestCpuList) {
  json j = figures_to_json(full_figures());
  j["cpus"] = std::string(MLOS_POLICY_CPU_LIST_MAX - 1, '1');
  auto f = figures_from_json(j);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(std::strlen(f->cpus), static_cast<size_t>(MLOS_POLICY_CPU_LIST_MAX - 1));
}

TEST(PolicyProtocolTest, EveryActionKindRoundTrips) {
  for (int k = 0; k < kActionKindCount; ++k) {
    const auto kind = static_cast<ActionKind>(k);
    Action a{7, kind, kind == ActionKind::kMemoryHigh ? UINT64_MAX : 250,
             kind == ActionKind::kFileAdvice ? "/data/shard 1" : ""};
    const bool names_policy = kind == ActionKind::kRequestPolicy || kind == ActionKind::kReleasePolicy;
    if (names_policy) a.target = "prefetch";
    if (kind == ActionKind::kRequestPolicy) a.payload = R"({"ahead_mb": 8})";
    if (kind == ActionKind::kReport) a.payload = R"({"class": "input_bound", "why": ["x > 1"]})";
    if (kind == ActionKind::kRecommendPlacement) {
      a.value = MLOS_POLICY_PLACEMENT_EXCLUSIVE;
      a.payload = "compute-bound, and others took 40% of its CPUs";
    }
    const json j = action_to_json(a);
    EXPECT_EQ(j["kind"], action_kind_name(kind));
    EXPECT_EQ(j.contains("path"), kind == ActionKind::kFileAdvice);
    EXPECT_EQ(j.contains("target"), names_policy);
    EXPECT_EQ(j.contains("payload"), !a.payload.empty());
    auto back = action_from_json(json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, a);
    EXPECT_EQ(action_kind_from_name(action_kind_name(kind)), kind);
  }
  EXPECT_EQ(action_kind_from_name("teleport"), std::nullopt);
  EXPECT_EQ(action_kind_from_name(""), std::nullopt);
}

TEST(PolicyProtocolTest, ActionsRefuseEachWrongField) {
  const std::vector<std::pair<const char*, json>> cases = {
      {"not an object", json::array({1})},
      {"no job", {{"kind", "threads"}, {"value", 1}}},
      {"negative job", {{"job", -1}, {"kind", "threads"}, {"value", 1}}},
      {"job a string", {{"job", "1"}, {"kind", "threads"}, {"value", 1}}},
      {"unknown kind", {{"job", 1}, {"kind", "teleport"}, {"value", 1}}},
      {"kind a number", {{"job", 1}, {"kind", 3}, {"value", 1}}},
      {"no value", {{"job", 1}, {"kind", "threads"}}},
      {"negative value", {{"job", 1}, {"kind", "cpu_weight"}, {"value", -100}}},
      {"fractional value", {{"job", 1}, {"kind", "cpu_weight"}, {"value", 1.5}}},
      {"path on a weight", {{"job", 1}, {"kind", "cpu_weight"}, {"value", 100}, {"path", "/etc/passwd"}}},
      {"file advice without path", {{"job", 1}, {"kind", "file_advice"}, {"value", 1}}},
      {"empty path", {{"job", 1}, {"kind", "file_advice"}, {"value", 1}, {"path", ""}}},
      {"path of PATH_MAX", {{"job", 1}, {"kind", "file_advice"}, {"value", 1}, {"path", std::string(PATH_MAX, 'a')}}},
      {"path a number", {{"job", 1}, {"kind", "file_advice"}, {"value", 1}, {"path", 5}}},
      {"request without target", {{"job", 1}, {"kind", "request_policy"}, {"value", 0}, {"payload", "{}"}}},
      {"target not a policy name",
       {{"job", 1}, {"kind", "request_policy"}, {"value", 0}, {"target", "../x"}, {"payload", "{}"}}},
      {"target on a weight", {{"job", 1}, {"kind", "cpu_weight"}, {"value", 100}, {"target", "auto"}}},
      {"request config not an object",
       {{"job", 1}, {"kind", "request_policy"}, {"value", 0}, {"target", "auto"}, {"payload", "[1]"}}},
      {"request without payload", {{"job", 1}, {"kind", "request_policy"}, {"value", 0}, {"target", "auto"}}},
      {"payload on a release",
       {{"job", 1}, {"kind", "release_policy"}, {"value", 0}, {"target", "auto"}, {"payload", "{}"}}},
      {"report not JSON", {{"job", 1}, {"kind", "report"}, {"value", 0}, {"payload", "{class"}}},
      {"report over the bound",
       {{"job", 1}, {"kind", "report"}, {"value", 0},
        {"payload", "{\"x\": \"" + std::string(kMaxActionPayloadBytes, 'a') + "\"}"}}},
      {"placement out of range", {{"job", 1}, {"kind", "recommend_placement"}, {"value", 2}, {"payload", "why"}}},
      {"payload a number", {{"job", 1}, {"kind", "recommend_placement"}, {"value", 1}, {"payload", 5}}},
  };
  for (const auto& [what, j] : cases) {
    auto a = action_from_json(j);
    ASSERT_FALSE(a.ok()) << what;
    EXPECT_EQ(a.error().code, MLOS_ERR_INVALID_ARGUMENT) << what;
    EXPECT_EQ(a.error().message.rfind("bad action: ", 0), 0u) << what << ": " << a.error().message;
  }
  auto unknown = action_from_json({{"job", 1}, {"kind", "teleport"}, {"value", 1}});
  EXPECT_NE(unknown.error().message.find("'teleport'"), std::string::npos) << unknown.error().message;
}

TEST(PolicyProtocolTest, PolicyInfoRoundTripsAndRefusesBadFields) {
  PolicyInfo info{"thread-governor", "advises threads", "{\"type\":\"object\"}", 500};
  auto back = policy_info_from_json(json::parse(info.to_json().dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->name, info.name);
  EXPECT_EQ(back->description, info.description);
  EXPECT_EQ(back->config_schema, info.config_schema);
  EXPECT_EQ(back->tick_interval_ms, 500u);

  for (auto spoil : std::vector<std::function<void(json&)>>{
           [](json& j) { j["name"] = 1; }, [](json& j) { j.erase("description"); },
           [](json& j) { j["config_schema"] = nullptr; }, [](json& j) { j["tick_interval_ms"] = 0; },
           [](json& j) { j["tick_interval_ms"] = 3600 * 1000 + 1; }, [](json& j) { j["tick_interval_ms"] = "1"; }}) {
    json j = info.to_json();
    spoil(j);
    auto bad = policy_info_from_json(j);
    ASSERT_FALSE(bad.ok()) << j.dump();
    EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
  }
}

TEST(PolicyProtocolTest, ReplyWithEverythingParses) {
  const json payload{{"id", 12},
                     {"ok", true},
                     {"actions", json::array({action_to_json(Action{3, ActionKind::kThreads, 6, ""}),
                                              action_to_json(Action{3, ActionKind::kFileAdvice, 2, "/d/x"})})},
                     {"dropped_actions", 5},
                     {"logs", json::array({json{{"level", MLOS_POLICY_LOG_WARN}, {"message", "hello"}}})},
                     {"info", PolicyInfo{"example", "d", "", 1000}.to_json()}};
  auto r = parse_host_reply(payload);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->id, 12u);
  EXPECT_FALSE(r->error.has_value());
  ASSERT_EQ(r->actions.size(), 2u);
  EXPECT_EQ(r->actions[1], (Action{3, ActionKind::kFileAdvice, 2, "/d/x"}));
  EXPECT_EQ(r->dropped_actions, 5u);
  ASSERT_EQ(r->logs.size(), 1u);
  EXPECT_EQ(r->logs[0].level, MLOS_POLICY_LOG_WARN);
  EXPECT_EQ(r->logs[0].message, "hello");
  EXPECT_EQ(r->info["name"], "example");
}

TEST(PolicyProtocolTest, ErrorReplyCarriesCodeAndMessageCutToTheLogLength) {
  auto r = parse_host_reply(
      {{"id", 0}, {"ok", false}, {"error", {{"code", MLOS_ERR_VERSION_MISMATCH}, {"message", std::string(5000, 'm')}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->error.has_value());
  EXPECT_EQ(r->error->code, MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(r->error->message.size(), kMaxLogLength);
}

TEST(PolicyProtocolTest, LongLogLinesAreCut) {
  auto r = parse_host_reply({{"id", 1}, {"ok", true}, {"logs", json::array({json{{"level", 2}, {"message", std::string(2000, 'x')}}})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->logs[0].message.size(), kMaxLogLength);
}

TEST(PolicyProtocolTest, LimitsAreInclusive) {
  json actions = json::array(), logs = json::array();
  for (size_t i = 0; i < kMaxActionsPerReply; ++i) actions.push_back(action_to_json(Action{1, ActionKind::kIoWeight, 5, ""}));
  for (size_t i = 0; i < kMaxLogsPerReply; ++i) logs.push_back(json{{"level", 1}, {"message", "m"}});
  auto r = parse_host_reply({{"id", 1}, {"ok", true}, {"actions", actions}, {"logs", logs}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->actions.size(), kMaxActionsPerReply);
  EXPECT_EQ(r->logs.size(), kMaxLogsPerReply);
}

TEST(PolicyProtocolTest, RepliesRefuseWhatAWellBehavedHostNeverSends) {
  json too_many_actions = json::array(), too_many_logs = json::array();
  for (size_t i = 0; i <= kMaxActionsPerReply; ++i) {
    too_many_actions.push_back(action_to_json(Action{1, ActionKind::kIoWeight, 5, ""}));
  }
  for (size_t i = 0; i <= kMaxLogsPerReply; ++i) too_many_logs.push_back(json{{"level", 1}, {"message", "m"}});
  const std::vector<std::pair<const char*, json>> cases = {
      {"not an object", json::array()},
      {"no id", {{"ok", true}}},
      {"negative id", {{"id", -1}, {"ok", true}}},
      {"id a string", {{"id", "1"}, {"ok", true}}},
      {"no ok", {{"id", 1}}},
      {"ok a number", {{"id", 1}, {"ok", 1}}},
      {"ok false without error", {{"id", 1}, {"ok", false}}},
      {"error without message", {{"id", 1}, {"ok", false}, {"error", {{"code", -1}}}}},
      {"error code a string", {{"id", 1}, {"ok", false}, {"error", {{"code", "-1"}, {"message", "m"}}}}},
      // An error whose code reads as success would turn a refusal into an
      // MLOS_OK at the C boundary.
      {"error code 0", {{"id", 1}, {"ok", false}, {"error", {{"code", 0}, {"message", "m"}}}}},
      {"error code positive", {{"id", 1}, {"ok", false}, {"error", {{"code", 7}, {"message", "m"}}}}},
      {"error code past INT64_MAX", {{"id", 1}, {"ok", false}, {"error", {{"code", UINT64_MAX}, {"message", "m"}}}}},
      {"error not an object", {{"id", 1}, {"ok", false}, {"error", "bad"}}},
      {"too many actions", {{"id", 1}, {"ok", true}, {"actions", too_many_actions}}},
      {"actions not an array", {{"id", 1}, {"ok", true}, {"actions", json::object()}}},
      {"a malformed action", {{"id", 1}, {"ok", true}, {"actions", json::array({json{{"job", 1}, {"kind", "x"}, {"value", 1}}})}}},
      {"path on a weight action",
       {{"id", 1}, {"ok", true}, {"actions", json::array({json{{"job", 1}, {"kind", "cpu_weight"}, {"value", 1}, {"path", "/x"}}})}}},
      {"dropped_actions negative", {{"id", 1}, {"ok", true}, {"dropped_actions", -1}}},
      {"too many logs", {{"id", 1}, {"ok", true}, {"logs", too_many_logs}}},
      {"log without message", {{"id", 1}, {"ok", true}, {"logs", json::array({json{{"level", 1}}})}}},
      {"log level out of range", {{"id", 1}, {"ok", true}, {"logs", json::array({json{{"level", 9}, {"message", "m"}}})}}},
      {"log not an object", {{"id", 1}, {"ok", true}, {"logs", json::array({"m"})}}},
      {"info not an object", {{"id", 1}, {"ok", true}, {"info", json::array()}}},
  };
  for (const auto& [what, payload] : cases) {
    auto r = parse_host_reply(payload);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT) << what;
    EXPECT_EQ(r.error().message.rfind("policy host sent a bad reply: ", 0), 0u) << what << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace mlos::policy
