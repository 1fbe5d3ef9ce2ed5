// SPDX-License-Identifier: Apache-2.0
// PhasePolicy (the default phase table, nice shifting and clamping, I/O
// priority encoding) and PhaseProfile (per-phase time and counts on a fake
// clock).
#include <gtest/gtest.h>

#include <cstring>

#include "core/phase_policy.h"
#include "core/phase_profile.h"

namespace mlos {
namespace {

using IO = IoPriority;

TEST(PhaseTest, PolicyDefaultTable) {
  const PhasePolicy& p = PhasePolicy::defaults();
  struct Row {
    mlos_training_phase_t phase;
    int nice_offset;
    IoPriority io;
    BufferLockAction gradients;
  };
  const Row rows[] = {
      {MLOS_TRAINING_PHASE_IDLE, +10, {IO::kIdle, 0}, BufferLockAction::kUnlock},
      {MLOS_TRAINING_PHASE_DATA_LOADING, +5, {IO::kBestEffort, 0}, BufferLockAction::kKeep},
      {MLOS_TRAINING_PHASE_FORWARD, 0, {IO::kBestEffort, 4}, BufferLockAction::kKeep},
      {MLOS_TRAINING_PHASE_BACKWARD, -5, {IO::kBestEffort, 4}, BufferLockAction::kLock},
      {MLOS_TRAINING_PHASE_OPTIMIZER, 0, {IO::kBestEffort, 4}, BufferLockAction::kKeep},
      {MLOS_TRAINING_PHASE_CHECKPOINT, -10, {IO::kBestEffort, 0}, BufferLockAction::kKeep},
  };
  static_assert(sizeof rows / sizeof rows[0] == MLOS_TRAINING_PHASE_COUNT);
  for (const Row& row : rows) {
    const PhaseRule& r = p.rule(row.phase);
    EXPECT_EQ(r.nice_offset, row.nice_offset) << PhasePolicy::name(row.phase);
    EXPECT_EQ(r.io, row.io) << PhasePolicy::name(row.phase);
    EXPECT_EQ(r.gradients, row.gradients) << PhasePolicy::name(row.phase);
  }
  // The one table: defaults() is a single object.
  EXPECT_EQ(&PhasePolicy::defaults(), &p);
}

TEST(PhaseTest, PolicySettingsShiftByBaseNiceAndPriority) {
  const PhasePolicy& p = PhasePolicy::defaults();
  // Normal job, thread at nice 0.
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_FORWARD, 0, 0), (ThreadSettings{0, {IO::kBestEffort, 4}}));
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_IDLE, 0, 0), (ThreadSettings{10, {IO::kIdle, 0}}));
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_BACKWARD, 0, 0).nice, -5);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_CHECKPOINT, 0, 0), (ThreadSettings{-10, {IO::kBestEffort, 0}}));
  // Base nice is the starting point; a higher job priority lowers nice.
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_DATA_LOADING, 3, 0).nice, 8);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_DATA_LOADING, 3, 2).nice, 6);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_FORWARD, 0, -4).nice, 4);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_OPTIMIZER, -2, 5).nice, -7);
}

TEST(PhaseTest, PolicyNiceClampsToKernelRange) {
  const PhasePolicy& p = PhasePolicy::defaults();
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_IDLE, 15, 0).nice, 19);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_IDLE, 19, MLOS_PRIORITY_MIN).nice, 19);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_IDLE, 9, 0).nice, 19);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_IDLE, 8, 0).nice, 18);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_CHECKPOINT, -15, 0).nice, -20);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_CHECKPOINT, 0, MLOS_PRIORITY_MAX).nice, -20);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_CHECKPOINT, -20, MLOS_PRIORITY_MAX).nice, -20);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_CHECKPOINT, -10, 0).nice, -20);
  EXPECT_EQ(p.settings_for(MLOS_TRAINING_PHASE_CHECKPOINT, -9, 0).nice, -19);
}

TEST(PhaseTest, PolicyIoPriorityEncoding) {
  EXPECT_EQ((IoPriority{IO::kBestEffort, 4}).encode(), (2 << 13) | 4);
  EXPECT_EQ((IoPriority{IO::kIdle, 0}).encode(), 3 << 13);
  EXPECT_EQ((IoPriority{IO::kRealtime, 7}).encode(), (1 << 13) | 7);
  EXPECT_EQ((IoPriority{IO::kNone, 0}).encode(), 0);
  EXPECT_EQ(IoPriority::decode(0x4004), (IoPriority{IO::kBestEffort, 4}));
  for (int cls = IO::kNone; cls <= IO::kIdle; ++cls) {
    for (int level = 0; level <= 7; ++level) {
      IoPriority io{cls, level};
      EXPECT_EQ(IoPriority::decode(io.encode()), io) << cls << "/" << level;
    }
  }
}

TEST(PhaseTest, PolicyNames) {
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_IDLE), "IDLE");
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_DATA_LOADING), "DATA_LOADING");
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_FORWARD), "FORWARD");
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_BACKWARD), "BACKWARD");
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_OPTIMIZER), "OPTIMIZER");
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_CHECKPOINT), "CHECKPOINT");
  EXPECT_STREQ(PhasePolicy::name(-1), "UNKNOWN");
  EXPECT_STREQ(PhasePolicy::name(MLOS_TRAINING_PHASE_COUNT), "UNKNOWN");
  EXPECT_TRUE(PhasePolicy::valid_phase(0));
  EXPECT_TRUE(PhasePolicy::valid_phase(5));
  EXPECT_FALSE(PhasePolicy::valid_phase(6));
  EXPECT_FALSE(PhasePolicy::valid_phase(-1));
}

TEST(PhaseTest, ProfileStartsInInitialPhaseWithNothingCounted) {
  PhaseProfile prof(1000);
  EXPECT_EQ(prof.current(), MLOS_TRAINING_PHASE_IDLE);
  EXPECT_EQ(prof.calls(), 0u);
  EXPECT_EQ(prof.os_updates(), 0u);
  for (uint64_t e : prof.entries()) EXPECT_EQ(e, 0u);
  auto ns = prof.nanoseconds(1500);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_IDLE], 500u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_FORWARD], 0u);
  PhaseProfile fwd(0, MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_EQ(fwd.current(), MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_EQ(fwd.nanoseconds(70)[MLOS_TRAINING_PHASE_FORWARD], 70u);
}

TEST(PhaseTest, ProfileTimeAccumulatesPerPhase) {
  PhaseProfile prof(1000);
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_DATA_LOADING, 1100));  // idle 100
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_FORWARD, 1400));       // loading 300
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_BACKWARD, 1450));      // forward 50
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_DATA_LOADING, 1600));  // backward 150
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_FORWARD, 1800));       // loading 200
  auto ns = prof.nanoseconds(1825);                                  // forward 25 so far
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_IDLE], 100u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_DATA_LOADING], 500u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_FORWARD], 75u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_BACKWARD], 150u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_OPTIMIZER], 0u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_CHECKPOINT], 0u);
  EXPECT_EQ(prof.entries()[MLOS_TRAINING_PHASE_DATA_LOADING], 2u);
  EXPECT_EQ(prof.entries()[MLOS_TRAINING_PHASE_FORWARD], 2u);
  EXPECT_EQ(prof.entries()[MLOS_TRAINING_PHASE_BACKWARD], 1u);
  EXPECT_EQ(prof.entries()[MLOS_TRAINING_PHASE_IDLE], 0u);  // initial phase is not an entry
  EXPECT_EQ(prof.calls(), 5u);
  EXPECT_EQ(prof.current(), MLOS_TRAINING_PHASE_FORWARD);
  // nanoseconds() is a view: asking does not move the clock.
  EXPECT_EQ(prof.nanoseconds(1900)[MLOS_TRAINING_PHASE_FORWARD], 150u);
  EXPECT_EQ(prof.nanoseconds(1825)[MLOS_TRAINING_PHASE_FORWARD], 75u);
}

TEST(PhaseTest, ProfileReenteringCurrentPhaseCountsCallNotEntry) {
  PhaseProfile prof(0);
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_FORWARD, 10));
  EXPECT_FALSE(prof.enter(MLOS_TRAINING_PHASE_FORWARD, 20));
  EXPECT_FALSE(prof.enter(MLOS_TRAINING_PHASE_FORWARD, 30));
  EXPECT_EQ(prof.calls(), 3u);
  EXPECT_EQ(prof.entries()[MLOS_TRAINING_PHASE_FORWARD], 1u);
  // Time in the phase runs from the real entry, not the repeated calls.
  EXPECT_EQ(prof.nanoseconds(40)[MLOS_TRAINING_PHASE_FORWARD], 30u);
  PhaseProfile idle(0);
  EXPECT_FALSE(idle.enter(MLOS_TRAINING_PHASE_IDLE, 5));
  EXPECT_EQ(idle.entries()[MLOS_TRAINING_PHASE_IDLE], 0u);
  EXPECT_EQ(idle.calls(), 1u);
}

TEST(PhaseTest, ProfileClockGoingBackwardsAddsNothing) {
  PhaseProfile prof(1000);
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_FORWARD, 900));  // backwards: idle gets 0
  EXPECT_EQ(prof.nanoseconds(900)[MLOS_TRAINING_PHASE_IDLE], 0u);
  EXPECT_EQ(prof.nanoseconds(800)[MLOS_TRAINING_PHASE_FORWARD], 0u);  // now before since
  EXPECT_EQ(prof.nanoseconds(950)[MLOS_TRAINING_PHASE_FORWARD], 50u);
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_BACKWARD, 960));
  EXPECT_TRUE(prof.enter(MLOS_TRAINING_PHASE_OPTIMIZER, 100));  // backwards again
  auto ns = prof.nanoseconds(100);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_IDLE], 0u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_FORWARD], 60u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_BACKWARD], 0u);
  EXPECT_EQ(ns[MLOS_TRAINING_PHASE_OPTIMIZER], 0u);
  // The new reference point is the last call, so time counts from 100.
  EXPECT_EQ(prof.nanoseconds(130)[MLOS_TRAINING_PHASE_OPTIMIZER], 30u);
  EXPECT_EQ(prof.entries()[MLOS_TRAINING_PHASE_OPTIMIZER], 1u);
}

TEST(PhaseTest, ProfileCountsOsUpdates) {
  PhaseProfile prof(0);
  prof.count_os_update();
  prof.count_os_update();
  EXPECT_EQ(prof.os_updates(), 2u);
  EXPECT_EQ(prof.calls(), 0u);
}

}  // namespace
}  // namespace mlos
