// SPDX-License-Identifier: Apache-2.0
// The helper's worker governor: threads go to a starving trainer and come
// away from one with batches waiting, one step per slot, within 1..max.
#include <gtest/gtest.h>

#include "dataload/worker_governor.h"

using mlos::dataload::WorkerGovernor;

TEST(WorkerGovernor, StartsWithEveryThread) { EXPECT_EQ(WorkerGovernor(4, 8).active(), 4u); }

TEST(WorkerGovernor, ATrainerWithBatchesWaitingAndNoWaitGivesThreadsBackOneAtATime) {
  WorkerGovernor g(4, 8);
  EXPECT_EQ(g.on_release(4, 0.0), 3u);  // half the slots ready, no wait
  EXPECT_EQ(g.on_release(6, 0.005), 2u);
  EXPECT_EQ(g.on_release(8, 0.0), 1u);
  EXPECT_EQ(g.on_release(8, 0.0), 1u);  // never below one
}

TEST(WorkerGovernor, AStarvingTrainerOrAnEmptyQueueGetsThreadsBack) {
  WorkerGovernor g(3, 6);
  for (int i = 0; i < 3; ++i) g.on_release(6, 0.0);
  ASSERT_EQ(g.active(), 1u);
  EXPECT_EQ(g.on_release(3, 0.2), 2u);  // it waited 20 % of the time
  EXPECT_EQ(g.on_release(0, 0.0), 3u);  // nothing ready
  EXPECT_EQ(g.on_release(0, 0.9), 3u);  // never above the maximum
}

TEST(WorkerGovernor, BetweenTheThresholdsNothingChanges) {
  WorkerGovernor g(4, 8);
  EXPECT_EQ(g.on_release(2, 0.0), 4u);   // under half the slots ready
  EXPECT_EQ(g.on_release(6, 0.03), 4u);  // waited a little: neither fed nor starved
  g.on_release(8, 0.0);
  EXPECT_EQ(g.on_release(2, 0.03), 3u);
}
