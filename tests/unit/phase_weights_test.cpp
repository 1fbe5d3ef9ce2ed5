// SPDX-License-Identifier: Apache-2.0
// Phases to CPU weights: the default ordering, priority scaling, and strict
// configuration.
#include "core/phase_weights.h"

#include <gtest/gtest.h>

namespace mlos {
namespace {

TEST(PhaseWeightsTest, DefaultsFavourComputeAndCheckpointOverIdleAndLoading) {
  const auto p = PhaseWeights::defaults();
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_IDLE, 0), 10u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_DATA_LOADING, 0), 50u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_FORWARD, 0), 100u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_BACKWARD, 0), 200u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_OPTIMIZER, 0), 100u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_CHECKPOINT, 0), 400u);
}

TEST(PhaseWeightsTest, PriorityScalesAndIsClamped) {
  const auto p = PhaseWeights::defaults();
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_BACKWARD, 5), 300u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_BACKWARD, -5), 100u);
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_IDLE, MLOS_PRIORITY_MIN), 1u);  // never 0
  EXPECT_EQ(p.weight(MLOS_TRAINING_PHASE_CHECKPOINT, 99), 800u);         // priority clamped to 10
}

TEST(PhaseWeightsTest, ConfigOverridesNamedPhasesAndRejectsTheRestWhole) {
  auto p = PhaseWeights::from_json({{"phase_weights", {{"IDLE", 1}, {"BACKWARD", 1000}}}});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->weight(MLOS_TRAINING_PHASE_IDLE, 0), 1u);
  EXPECT_EQ(p->weight(MLOS_TRAINING_PHASE_BACKWARD, 0), 1000u);
  EXPECT_EQ(p->weight(MLOS_TRAINING_PHASE_FORWARD, 0), 100u);  // untouched default
  for (const nlohmann::json& bad :
       {nlohmann::json{{"phase_weight", {}}}, nlohmann::json{{"phase_weights", {{"BACKWARDS", 2}}}},
        nlohmann::json{{"phase_weights", {{"IDLE", 0}}}}, nlohmann::json{{"phase_weights", {{"IDLE", 10001}}}},
        nlohmann::json{{"phase_weights", {{"IDLE", 2.5}}}}, nlohmann::json{{"phase_weights", 3}},
        nlohmann::json::array()}) {
    auto r = PhaseWeights::from_json(bad);
    EXPECT_FALSE(r.ok()) << bad.dump();
    if (!r.ok()) EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
  }
}

}  // namespace
}  // namespace mlos
