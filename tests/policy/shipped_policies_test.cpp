// SPDX-License-Identifier: Apache-2.0
// The policies mlOS ships (policies/), loaded from the build tree the way
// mlosd loads them from its policy directory.
#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

using nlohmann::json;

TEST(ShippedPoliciesTest, CatalogListsAllFive) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  auto cat = h.hosts().catalog();
  ASSERT_TRUE(cat.ok()) << cat.error().message;
  std::vector<std::string> names;
  for (const auto& p : cat->policies) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"auto", "example", "phase-weights", "prefetch", "thread-governor"}));
}

TEST(ShippedPoliciesTest, ExampleAdvisesTheConfiguredThreadsAndFavoursCheckpoints) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1);
  h.owner().add_job(2);
  ASSERT_TRUE(h.hosts().attach("example", 1, json{{"threads", 3}}).ok());
  EXPECT_TRUE(h.owner().applied_value("example", ActionKind::kThreads, 1, 3));
  ASSERT_TRUE(h.hosts().attach("example", 2, json::object()).ok());
  EXPECT_TRUE(h.owner().applied_value("example", ActionKind::kThreads, 2, 4)) << "the grant's recommended count";
  Status bad = h.hosts().attach("example", 3, json{{"threds", 3}});
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);

  h.hosts().phase_changed(1, MLOS_TRAINING_PHASE_BACKWARD, MLOS_TRAINING_PHASE_CHECKPOINT);
  ASSERT_TRUE(h.poll_until([&] { return h.owner().applied_value("example", ActionKind::kCpuWeight, 1, 400); }));
}

TEST(ShippedPoliciesTest, PhaseWeightsFollowsThePhaseScaledByPriority) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1, /*priority=*/0);
  h.owner().add_job(2, /*priority=*/10);
  ASSERT_TRUE(h.hosts().attach("phase-weights", 1, json::object()).ok());
  ASSERT_TRUE(h.hosts().attach("phase-weights", 2, json::object()).ok());
  // No phase marked yet: computed as FORWARD (100, the kernel's default).
  EXPECT_TRUE(h.owner().applied_value("phase-weights", ActionKind::kCpuWeight, 1, 100));

  for (uint64_t job : {1, 2}) {
    h.owner().figures[job].phase = MLOS_TRAINING_PHASE_BACKWARD;
    h.hosts().phase_changed(job, MLOS_TRAINING_PHASE_IDLE, MLOS_TRAINING_PHASE_BACKWARD);
  }
  ASSERT_TRUE(h.poll_until([&] {
    return h.owner().count_applied("phase-weights", ActionKind::kCpuWeight, 2) == 2;
  })) << h.hosts().status().dump();
  EXPECT_TRUE(h.owner().applied_value("phase-weights", ActionKind::kCpuWeight, 1, 200));
  EXPECT_TRUE(h.owner().applied_value("phase-weights", ActionKind::kCpuWeight, 2, 400)) << "200 * (100 + 10 * 10) / 100";
  EXPECT_EQ(h.status_of("phase-weights")["actions_applied"]["cpu_weight"], 4);
}

TEST(ShippedPoliciesTest, ThreadGovernorAttachesAndRefusesUnknownKeys) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1);
  h.owner().add_job(2);
  ASSERT_TRUE(h.hosts().attach("thread-governor", 1, json{{"max_threads", 2}}).ok());
  EXPECT_EQ(h.status_of("thread-governor")["state"], "running");
  Status bad = h.hosts().attach("thread-governor", 2, json{{"threads", 2}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.error().message.find("\"threads\""), std::string::npos) << bad.error().message;
  EXPECT_EQ(h.hosts().policies_of(1), std::vector<std::string>{"thread-governor"});
  EXPECT_TRUE(h.hosts().policies_of(2).empty());
}

}  // namespace
}  // namespace mlos::policy::testing
