// SPDX-License-Identifier: Apache-2.0
// The `auto` policy: its features from figures, its model file's
// validation (a corrupt or mismatched model is refused, naming why), the
// classifier's settling, the class plans, and the policy in a real host
// classifying a job from injected figures, attaching what its class needs
// and reporting why.
#include <cmath>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "class_plan.h"
#include "decision_tree.h"
#include "job_classifier.h"
#include "policy_test_support.h"

namespace mlos::autopolicy {
namespace {

using nlohmann::json;

mlos_policy_job_figures_t figures_at(double now) {
  mlos_policy_job_figures_t f = policy::empty_figures(1);
  f.now_seconds = now;
  f.num_cpus = 2;
  return f;
}

// A small model in the file format: data loading over 0.3 of the window is
// input-bound; else collectives over 0.3 communication-bound; else
// compute-bound.
json tiny_model() {
  json features = json::array(), classes = json::array();
  for (const char* n : kFeatureNames) features.push_back(n);
  for (const char* n : kClassNames) classes.push_back(n);
  return json{{"format", "mlos-auto-tree"},
              {"version", 1},
              {"features", features},
              {"classes", classes},
              {"nodes",
               {{{"feature", kDataLoadingShare}, {"threshold", 0.3}, {"left", 1}, {"right", 4}},
                {{"feature", kCollectiveShare}, {"threshold", 0.3}, {"left", 2}, {"right", 3}},
                {{"class", 1}, {"confidence", 0.9}},
                {{"class", 3}, {"confidence", 0.8}},
                {{"class", 0}, {"confidence", 1.0}}}}};
}

DecisionTree tree_of(const json& model) {
  auto t = DecisionTree::parse(model);
  if (auto* why = std::get_if<std::string>(&t)) ADD_FAILURE() << *why;
  return std::get<DecisionTree>(std::move(t));
}

std::string refusal(const json& model) {
  auto t = DecisionTree::parse(model);
  return std::holds_alternative<std::string>(t) ? std::get<std::string>(t) : "";
}

TEST(AutoFeatures, SharesAndCpuUseOverTheWindow) {
  auto a = figures_at(10), b = figures_at(12);
  a.phase_seconds[MLOS_TRAINING_PHASE_DATA_LOADING] = 1;
  b.phase_seconds[MLOS_TRAINING_PHASE_DATA_LOADING] = 2;  // 1 of 2 s
  b.phase_seconds[MLOS_TRAINING_PHASE_FORWARD] = 0.25;
  b.phase_seconds[MLOS_TRAINING_PHASE_BACKWARD] = 0.5;
  b.phase_entries[MLOS_TRAINING_PHASE_FORWARD] = 4;
  a.cpu_seconds = 5, b.cpu_seconds = 7;              // 2 s of 4 CPU-seconds
  a.cpus_busy_seconds = 5, b.cpus_busy_seconds = 8;  // 1 more CPU-second by others
  a.collective_seconds = 0, b.collective_seconds = 0.2;
  b.memory_known = 1, b.memory_bytes = 3 << 20, b.memory_limit_bytes = 4 << 20;
  b.memory_pressure_level = MLOS_MEMORY_PRESSURE_MODERATE;
  auto f = features_between(a, b);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ((*f)[kDataLoadingShare], 0.5);
  EXPECT_DOUBLE_EQ((*f)[kComputeShare], 0.375);
  EXPECT_NEAR((*f)[kBackwardOfCompute], 2.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ((*f)[kCollectiveShare], 0.1);
  EXPECT_DOUBLE_EQ((*f)[kJobCpuUse], 0.5);
  EXPECT_DOUBLE_EQ((*f)[kOthersCpuUse], 0.25);
  EXPECT_DOUBLE_EQ((*f)[kMemoryFill], 0.75);
  EXPECT_DOUBLE_EQ((*f)[kMemoryPressure], MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_DOUBLE_EQ((*f)[kPhaseChangesPerSecond], 2);
}

TEST(AutoFeatures, UnknownReadingsAreMarkedAndAnEmptyWindowHasNone) {
  auto a = figures_at(10), b = figures_at(13);  // cpu and busy seconds unknown (-1)
  auto f = features_between(a, b);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ((*f)[kJobCpuUse], -1);
  EXPECT_EQ((*f)[kOthersCpuUse], -1);
  EXPECT_EQ((*f)[kCollectiveShare], 0);
  EXPECT_EQ((*f)[kMemoryFill], 0);
  EXPECT_FALSE(features_between(b, b).has_value());
  EXPECT_FALSE(features_between(b, a).has_value());
}

TEST(AutoModel, ClassifiesAndExplainsItsPath) {
  const DecisionTree t = tree_of(tiny_model());
  FeatureVector x{};
  x[kDataLoadingShare] = 0.1;
  x[kCollectiveShare] = 0.5;
  EXPECT_EQ(t.classify(x), WorkloadClass::kCommunicationBound);
  const Decision d = t.explain(x);
  EXPECT_EQ(d.cls, WorkloadClass::kCommunicationBound);
  EXPECT_DOUBLE_EQ(d.confidence, 0.8);
  EXPECT_EQ(d.why, (std::vector<std::string>{"data_loading_share <= 0.3", "collective_share > 0.3"}));
  x[kDataLoadingShare] = 0.7;
  EXPECT_EQ(t.classify(x), WorkloadClass::kInputBound);
}

TEST(AutoModel, ACorruptOrMismatchedModelIsRefusedSayingWhy) {
  auto with = [](const std::function<void(json&)>& change) {
    json m = tiny_model();
    change(m);
    return m;
  };
  EXPECT_NE(refusal(with([](json& m) { m["format"] = "sklearn"; })).find("format"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["version"] = 2; })).find("model version 2"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["features"][3] = "gpu_share"; })).find("features 3 is \"gpu_share\""),
            std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["features"].erase(0); })).find("another version"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["classes"][0] = "io_bound"; })).find("classes 0"), std::string::npos);
  // A child before its parent would let a walk loop.
  EXPECT_NE(refusal(with([](json& m) { m["nodes"][1]["left"] = 0; })).find("node 1"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["nodes"][1]["right"] = 99; })).find("node 1"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["nodes"][0]["feature"] = 11; })).find("feature out of range"),
            std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["nodes"][0]["threshold"] = "high"; })).find("threshold"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["nodes"][2]["class"] = 5; })).find("class 5"), std::string::npos);
  EXPECT_NE(refusal(with([](json& m) { m["nodes"] = json::array(); })).find("nodes"), std::string::npos);
  auto text = DecisionTree::parse_text("{\"format\": \"mlos-auto-tree\", \"version\": 1, \"nod");
  ASSERT_TRUE(std::holds_alternative<std::string>(text));
  EXPECT_EQ(std::get<std::string>(text), "the model is not valid JSON");
}

TEST(AutoModel, TheShippedModelLoads) {
  std::ifstream in(MLOS_AUTO_MODEL_PATH);
  ASSERT_TRUE(in) << MLOS_AUTO_MODEL_PATH;
  std::stringstream text;
  text << in.rdbuf();
  auto t = DecisionTree::parse_text(text.str());
  ASSERT_TRUE(std::holds_alternative<DecisionTree>(t)) << std::get<std::string>(t);
  EXPECT_GT(std::get<DecisionTree>(t).nodes(), 1u);
}

TEST(AutoClassifier, SettlesOnlyWhenWindowsAgree) {
  const DecisionTree t = tree_of(tiny_model());
  JobClassifier c(&t, ClassifierConfig{3, 2});
  double loading = 0;
  auto sample = [&](double now, double loading_seconds) {
    auto f = figures_at(now);
    loading += loading_seconds;
    f.phase_seconds[MLOS_TRAINING_PHASE_DATA_LOADING] = loading;
    return c.observe(f);
  };
  EXPECT_FALSE(sample(0, 0).features.has_value());  // no window yet
  EXPECT_FALSE(sample(1, 0).features.has_value());
  auto s = sample(3, 0);  // compute-bound window
  ASSERT_TRUE(s.decision.has_value());
  EXPECT_FALSE(s.settled_changed);
  s = sample(4, 0);
  EXPECT_TRUE(s.settled_changed);
  EXPECT_EQ(c.settled(), WorkloadClass::kComputeBound);
  // One window of heavy loading (3 s of the last 3) is not enough ...
  s = sample(5, 2.9);
  EXPECT_EQ(s.decision->cls, WorkloadClass::kInputBound);
  EXPECT_FALSE(s.settled_changed);
  EXPECT_EQ(c.settled(), WorkloadClass::kComputeBound);
  // ... two are.
  s = sample(6, 1);
  EXPECT_TRUE(s.settled_changed);
  EXPECT_EQ(c.settled(), WorkloadClass::kInputBound);
  EXPECT_EQ(c.windows(), 4);
}

TEST(AutoPlan, EachClassGetsWhatHelpsIt) {
  FeatureVector x{};
  EXPECT_EQ(plan_for(WorkloadClass::kInputBound, x).policies[0].first, "prefetch");
  ClassPlan compute = plan_for(WorkloadClass::kComputeBound, x);
  EXPECT_EQ(compute.policies[0].first, "thread-governor");
  EXPECT_FALSE(compute.placement.has_value());
  x[kOthersCpuUse] = 0.5;
  compute = plan_for(WorkloadClass::kComputeBound, x);
  EXPECT_EQ(compute.placement, MLOS_POLICY_PLACEMENT_EXCLUSIVE);
  EXPECT_NE(compute.placement_reason.find("50%"), std::string::npos) << compute.placement_reason;
  EXPECT_TRUE(plan_for(WorkloadClass::kMemoryBound, x).protect_memory);
  EXPECT_EQ(plan_for(WorkloadClass::kLatencyInference, x).placement, MLOS_POLICY_PLACEMENT_EXCLUSIVE);
  EXPECT_EQ(plan_for(WorkloadClass::kCommunicationBound, x).placement, MLOS_POLICY_PLACEMENT_EXCLUSIVE);
}

}  // namespace
}  // namespace mlos::autopolicy

namespace mlos::policy::testing {
namespace {

using nlohmann::json;

PolicyHostsOptions with_model(const json& model) {
  PolicyHostsOptions o = test_options(MLOS_SHIPPED_POLICY_DIR);
  o.node_config = json{{"auto", {{"model", model}}}};
  return o;
}

size_t count_kind(const Owner& o, ActionKind kind) {
  size_t n = 0;
  for (const auto& a : o.applied) n += a.policy == "auto" && a.action.kind == kind;
  return n;
}

TEST(AutoPolicyTest, ClassifiesAJobFromItsFiguresAndAttachesWhatItsClassNeeds) {
  Harness h(with_model(mlos::autopolicy::tiny_model()));
  h.owner().add_job(1);
  mlos_policy_job_figures_t& f = h.owner().figures[1];
  f.now_seconds = 100;
  Status attached = h.hosts().attach("auto", 1, json{{"confirm", 2}});
  ASSERT_TRUE(attached.ok()) << attached.error().message;
  ASSERT_TRUE(h.tick_once("auto"));  // the first sample
  EXPECT_EQ(count_kind(h.owner(), ActionKind::kReport), 0u);
  for (int i = 1; i <= 2; ++i) {  // two windows that spend 2 of 3 s loading
    f.now_seconds += 3;
    f.phase_seconds[MLOS_TRAINING_PHASE_DATA_LOADING] += 2;
    ASSERT_TRUE(h.tick_once("auto"));
  }
  ASSERT_EQ(count_kind(h.owner(), ActionKind::kRequestPolicy), 1u);
  for (const auto& a : h.owner().applied) {
    if (a.action.kind == ActionKind::kRequestPolicy) EXPECT_EQ(a.action.target, "prefetch");
  }
  ASSERT_EQ(count_kind(h.owner(), ActionKind::kReport), 2u);
  const json report = json::parse(h.owner().applied.back().action.payload);
  EXPECT_EQ(report["class"], "input_bound");
  EXPECT_EQ(report["why"], json::array({"data_loading_share > 0.3"}));
  EXPECT_NEAR(report["features"]["data_loading_share"].get<double>(), 2.0 / 3, 1e-9);
  EXPECT_TRUE(h.owner().logged("job 1: input_bound"));
  // The job turns compute-bound: prefetch is released, thread-governor asked for.
  for (int i = 1; i <= 2; ++i) {
    f.now_seconds += 3;
    ASSERT_TRUE(h.tick_once("auto"));
  }
  EXPECT_EQ(count_kind(h.owner(), ActionKind::kReleasePolicy), 1u);
  EXPECT_EQ(count_kind(h.owner(), ActionKind::kRequestPolicy), 2u);
  EXPECT_EQ(h.owner().applied.back().action.kind, ActionKind::kReport);
  EXPECT_EQ(json::parse(h.owner().applied.back().action.payload)["class"], "compute_bound");
}

TEST(AutoPolicyTest, ObservingOnlyReportsAndAsksForNothing) {
  Harness h(with_model(mlos::autopolicy::tiny_model()));
  h.owner().add_job(1);
  h.owner().figures[1].now_seconds = 100;
  Status attached = h.hosts().attach("auto", 1, json{{"act", false}, {"confirm", 1}});
  ASSERT_TRUE(attached.ok()) << attached.error().message;
  for (int i = 0; i < 3; ++i) {
    h.owner().figures[1].now_seconds += 3;
    ASSERT_TRUE(h.tick_once("auto"));
  }
  EXPECT_EQ(count_kind(h.owner(), ActionKind::kReport), 2u);
  EXPECT_EQ(count_kind(h.owner(), ActionKind::kRequestPolicy), 0u);
  EXPECT_EQ(count_kind(h.owner(), ActionKind::kRecommendPlacement), 0u);
  EXPECT_EQ(json::parse(h.owner().applied.back().action.payload)["acting"], false);
}

TEST(AutoPolicyTest, AMismatchedModelOrABadKeyIsRefusedWithTheReason) {
  json old = mlos::autopolicy::tiny_model();
  old["version"] = 2;
  Harness h(with_model(old));
  h.owner().add_job(1);
  Status s = h.hosts().attach("auto", 1, json::object());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_VERSION_MISMATCH);
  EXPECT_NE(s.error().message.find("model version 2"), std::string::npos) << s.error().message;

  Harness shipped(test_options(MLOS_SHIPPED_POLICY_DIR));  // the model built in
  shipped.owner().add_job(1);
  Status bad = shipped.hosts().attach("auto", 1, json{{"window", 3}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.error().message.find("window"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(shipped.hosts().attach("auto", 1, json{{"window_s", 5}}).ok());
}

}  // namespace
}  // namespace mlos::policy::testing
