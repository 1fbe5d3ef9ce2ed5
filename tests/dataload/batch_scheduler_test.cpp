// SPDX-License-Identifier: Apache-2.0
// BatchScheduler: batches made of consecutive samples of the epoch's order,
// delivered when complete (out of order unless asked), slots bounding what
// is in flight, every sample handed out exactly once.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "dataload/batch_scheduler.h"

using mlos::dataload::BatchScheduler;

namespace {
std::vector<uint64_t> iota(size_t n) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), 100);
  return v;
}
}  // namespace

TEST(BatchScheduler, HandsOutEverySampleOnceInBatchesOfConsecutiveSamples) {
  BatchScheduler s(4, 8, false);
  s.begin_epoch(0, iota(10), false);
  EXPECT_EQ(s.batches(), 3u);
  std::multiset<uint64_t> seen;
  std::vector<BatchScheduler::Task> tasks;
  while (auto t = s.next_task()) tasks.push_back(*t);
  ASSERT_EQ(tasks.size(), 10u);
  for (const auto& t : tasks) {
    seen.insert(t.sample);
    EXPECT_EQ(t.sample, 100 + t.batch * 4 + t.position);
  }
  EXPECT_EQ(seen.size(), 10u);
  std::vector<BatchScheduler::Done> done;
  for (const auto& t : tasks) {
    for (auto& d : s.complete(t, true)) done.push_back(d);
  }
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[2].size, 2u);  // the short last batch
  EXPECT_TRUE(s.epoch_delivered());
}

TEST(BatchScheduler, DropLastLeavesTheShortBatchOut) {
  BatchScheduler s(4, 8, false);
  s.begin_epoch(0, iota(10), true);
  EXPECT_EQ(s.batches(), 2u);
  int n = 0;
  while (s.next_task()) ++n;
  EXPECT_EQ(n, 8);
}

TEST(BatchScheduler, ASlowSampleDoesNotHoldBackLaterBatches) {
  BatchScheduler s(2, 4, false);
  s.begin_epoch(0, iota(4), false);
  auto a0 = *s.next_task(), a1 = *s.next_task(), b0 = *s.next_task(), b1 = *s.next_task();
  EXPECT_TRUE(s.complete(a0, true).empty());
  EXPECT_TRUE(s.complete(b0, true).empty());
  auto done = s.complete(b1, true);  // batch 1 before batch 0's slow sample
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].batch, 1u);
  done = s.complete(a1, true);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].batch, 0u);
}

TEST(BatchScheduler, InOrderHoldsFinishedBatchesUntilEarlierOnesAreDone) {
  BatchScheduler s(2, 4, true);
  s.begin_epoch(0, iota(4), false);
  auto a0 = *s.next_task(), a1 = *s.next_task(), b0 = *s.next_task(), b1 = *s.next_task();
  s.complete(a0, true);
  s.complete(b0, true);
  EXPECT_TRUE(s.complete(b1, true).empty());
  auto done = s.complete(a1, true);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].batch, 0u);
  EXPECT_EQ(done[1].batch, 1u);
}

TEST(BatchScheduler, SlotsBoundTheBatchesInFlight) {
  BatchScheduler s(1, 2, false);
  s.begin_epoch(0, iota(5), false);
  auto t0 = *s.next_task(), t1 = *s.next_task();
  EXPECT_FALSE(s.next_task());  // both slots busy
  auto done = s.complete(t0, true);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(s.next_task());  // delivered: the trainer holds the slot
  EXPECT_FALSE(s.free_slot(t1.slot));  // not delivered yet
  ASSERT_TRUE(s.free_slot(done[0].slot));
  EXPECT_FALSE(s.free_slot(done[0].slot));  // twice
  EXPECT_TRUE(s.next_task());
}

TEST(BatchScheduler, FailedPositionsAreReported) {
  BatchScheduler s(3, 2, false);
  s.begin_epoch(0, iota(3), false);
  auto a = *s.next_task(), b = *s.next_task(), c = *s.next_task();
  s.complete(c, false);
  s.complete(a, false);
  auto done = s.complete(b, true);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].failed, (std::vector<uint32_t>{0, 2}));
}

TEST(BatchScheduler, ANewEpochAbandonsBatchesInFlightAndFreesTheirSlots) {
  BatchScheduler s(2, 2, false);
  s.begin_epoch(0, iota(8), false);
  auto a0 = *s.next_task();
  auto a1 = *s.next_task();
  auto b0 = *s.next_task();  // batch 1: one of two handed out
  s.complete(a0, true);
  s.begin_epoch(0, iota(8), false);  // the same epoch again
  EXPECT_FALSE(s.next_task());       // both slots still held by abandoned batches
  EXPECT_TRUE(s.complete(a1, true).empty());  // stale: not delivered, slot freed
  EXPECT_TRUE(s.complete(b0, true).empty());
  auto fresh = s.next_task();
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->batch, 0u);
  EXPECT_EQ(fresh->sample, 100u);
}
