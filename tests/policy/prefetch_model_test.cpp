// SPDX-License-Identifier: Apache-2.0
// The prefetch policy's logic (policies/prefetch): the Markov read model
// learns repeated orders and block patterns and predicts nothing for a
// shuffled order; the prefetcher keeps to its budget, judges hits and
// waste, pauses a source whose hit rate falls, and backs off under memory
// pressure.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "prefetcher.h"
#include "read_model.h"

namespace mlos::prefetch {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

std::string file(int i) { return "/data/f" + std::to_string(i); }

std::vector<std::string> paths_of(const std::vector<ExtentRef>& e) {
  std::vector<std::string> out;
  for (const auto& x : e) out.push_back(x.path);
  return out;
}

TEST(ReadModelTest, LearnsARepeatedOrderOfFilesAndWalksItAhead) {
  ReadModel m(kMiB, 1000);
  const std::vector<int> order{3, 1, 4, 0, 5, 2};
  for (int i : order) m.observe(file(i), 0, 4096);
  m.observe(file(3), 0, 4096);
  // After 3 comes 1, then 4, 0, 5, 2, and then 3 again: a repeat ends the walk.
  auto p = m.predict(100 * kMiB, 100, 0.5);
  EXPECT_EQ(paths_of(p), (std::vector<std::string>{file(1), file(4), file(0), file(5), file(2)}));
  EXPECT_EQ(p[0].length, 4096u) << "the extent is what was read";
  EXPECT_DOUBLE_EQ(p[0].confidence, 0.5) << "one observation: 1 / (1 + 1)";
  EXPECT_EQ(m.predict(100 * kMiB, 2, 0.5).size(), 2u) << "at most max";
  EXPECT_EQ(m.predict(4096, 100, 0.5).size(), 1u) << "at most the bytes asked for";
}

TEST(ReadModelTest, AShuffledOrderLeavesNothingConfidentEnoughToPredict) {
  ReadModel m(kMiB, 10000);
  std::vector<int> order(200);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(7);
  for (int epoch = 0; epoch < 4; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int i : order) m.observe(file(i), 0, 0);
  }
  size_t predicted = 0;
  for (int i : order) {
    m.observe(file(i), 0, 0);
    predicted += m.predict(64 * kMiB, 64, 0.5).size();
  }
  // Each file had up to 4 different successors of one count: 1/5 < 0.5.
  // A pair that recurs by chance may still predict one step.
  EXPECT_LT(predicted, order.size() / 10);
}

TEST(ReadModelTest, LearnsAJumpingBlockPatternWithinAFile) {
  ReadModel m(kMiB, 1000);
  const std::vector<uint64_t> offsets{0, 40 * kMiB, 3 * kMiB, 17 * kMiB};
  for (int round = 0; round < 2; ++round) {
    for (uint64_t off : offsets) m.observe("/data/shard", off, 256 * 1024);
  }
  m.observe("/data/shard", 0, 256 * 1024);
  auto p = m.predict(100 * kMiB, 3, 0.5);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].offset, 40 * kMiB);
  EXPECT_EQ(p[1].offset, 3 * kMiB);
  EXPECT_EQ(p[2].offset, 17 * kMiB);
  EXPECT_EQ(p[0].length, 256u * 1024);
  EXPECT_DOUBLE_EQ(p[0].confidence, 2.0 / 3.0);
}

TEST(ReadModelTest, PiecesOfOneExtentExtendItInsteadOfMakingStates) {
  ReadModel m(kMiB, 1000);
  for (uint64_t off = 0; off < kMiB; off += 64 * 1024) m.observe("/data/a", off, 64 * 1024);
  m.observe("/data/b", 0, 0);
  m.observe("/data/a", 0, 64 * 1024);
  EXPECT_EQ(m.states(), 2u);
  auto p = m.predict(100 * kMiB, 10, 0.5);
  ASSERT_GE(p.size(), 1u);
  EXPECT_EQ(p[0].path, "/data/b");
  EXPECT_EQ(p[0].length, 0u) << "read whole";
}

TEST(ReadModelTest, AFullModelLearnsNoNewExtentsAndCountsThem) {
  ReadModel m(kMiB, 3);
  for (int i = 0; i < 10; ++i) m.observe(file(i), 0, 4096);
  EXPECT_EQ(m.states(), 3u);
  EXPECT_EQ(m.dropped_states(), 7u);
}

PrefetchConfig small_config() {
  PrefetchConfig c;
  c.ahead_bytes = 8 * kMiB;
  c.judge_window = 8;
  c.expire_reads = 16;
  c.pause_reads = 100;
  return c;
}

TEST(PrefetcherTest, FetchesThePlanAheadWithinTheBudgetAndCountsHits) {
  Prefetcher p(small_config());
  PlanView plan{1, {}};
  for (int i = 1; i <= 20; ++i) plan.next.emplace_back(file(i), static_cast<int64_t>(kMiB));
  auto f = p.next(plan, 0, 0);
  ASSERT_EQ(f.size(), 8u) << "8 MiB of 1 MiB files";
  EXPECT_EQ(f[0].path, file(1));
  EXPECT_EQ(p.outstanding_bytes(), 8 * kMiB);
  EXPECT_TRUE(p.next(plan, 0, 0).empty()) << "nothing more until the job reads";
  p.observe(file(1), 0, kMiB);
  EXPECT_EQ(p.stats().hits[0], 1u);
  EXPECT_EQ(p.outstanding_bytes(), 7 * kMiB);
  plan.next.erase(plan.next.begin());
  f = p.next(plan, 0, 0);
  // The reader moved: the 4 nearest pending files again (they may have
  // been evicted), then the one new file the budget has room for.
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].path, file(2));
  EXPECT_EQ(f[4].path, file(9));
  EXPECT_EQ(p.stats().fetches, 9u);
  EXPECT_EQ(p.stats().refreshes, 4u);
  EXPECT_EQ(p.outstanding_bytes(), 8 * kMiB);
  EXPECT_TRUE(p.next(plan, 0, 0).empty()) << "no read since: no refresh";
}

TEST(PrefetcherTest, BudgetFollowsTheMemoryLimitAndPressure) {
  Prefetcher p(small_config());
  EXPECT_EQ(p.budget(0, -1), 8 * kMiB);
  EXPECT_EQ(p.budget(16 * kMiB, 0), 4 * kMiB) << "a quarter of the limit";
  EXPECT_EQ(p.budget(0, 1), 2 * kMiB) << "moderate pressure: a quarter";
  EXPECT_EQ(p.budget(0, 2), 0u) << "critical pressure: nothing";
  PlanView plan{1, {{file(1), static_cast<int64_t>(kMiB)}}};
  EXPECT_TRUE(p.next(plan, 0, 2).empty());
}

TEST(PrefetcherTest, WastedFetchesPauseTheirSourceAndItResumesLater) {
  PrefetchConfig c = small_config();
  c.learn = false;
  Prefetcher p(c);
  // A plan the job never follows: every fetch expires unread.
  int next_file = 0;
  for (int round = 0; round < 200 && !p.paused(Source::kPlan); ++round) {
    PlanView plan{1, {}};
    for (int i = 0; i < 4; ++i) plan.next.emplace_back(file(1000 + next_file++), static_cast<int64_t>(kMiB));
    (void)p.next(plan, 0, 0);
    p.observe("/elsewhere/" + std::to_string(round), 0, 4096);
  }
  ASSERT_TRUE(p.paused(Source::kPlan));
  EXPECT_EQ(p.stats().pauses[0], 1u);
  EXPECT_EQ(p.stats().hits[0], 0u);
  EXPECT_GE(p.stats().wasted[0], 8u);
  PlanView plan{1, {{file(1), static_cast<int64_t>(kMiB)}}};
  EXPECT_TRUE(p.next(plan, 0, 0).empty()) << "paused";
  for (int i = 0; i < 100; ++i) p.observe("/elsewhere/x", 0, 4096);
  EXPECT_FALSE(p.paused(Source::kPlan));
  EXPECT_EQ(p.next(plan, 0, 0).size(), 1u) << "tries again";
}

TEST(PrefetcherTest, LearnedFetchesFollowTheModelAndHit) {
  Prefetcher p(small_config());
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int i = 0; i < 6; ++i) p.observe(file(i), 0, kMiB);
  }
  p.observe(file(0), 0, kMiB);
  auto f = p.next(PlanView{}, 0, 0);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].path, file(1));
  EXPECT_EQ(f[0].source, Source::kLearned);
  for (int i = 1; i < 6; ++i) p.observe(file(i), 0, kMiB);
  EXPECT_EQ(p.stats().hits[1], 5u);
  EXPECT_DOUBLE_EQ(p.stats().hit_rate(Source::kLearned), 1.0);
}

TEST(PrefetcherTest, EveryFetchHasALengthAndARefusedOneIsForgotten) {
  PrefetchConfig c = small_config();
  c.learn = false;
  Prefetcher p(c);
  PlanView plan{1, {{file(1), -1}, {file(2), static_cast<int64_t>(2 * kMiB)}}};
  auto f = p.next(plan, 0, 0);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].length, kMiB) << "unknown size: one block, never open-ended";
  EXPECT_EQ(f[1].length, 2 * kMiB);
  p.cancel(f[1]);
  EXPECT_EQ(p.outstanding_bytes(), kMiB);
  EXPECT_EQ(p.stats().fetches, 1u);
  EXPECT_EQ(p.next(plan, 0, 0).size(), 1u) << "the refused one is fetched again";
}

TEST(PrefetcherTest, LostReadsBreakTheChainInsteadOfTeachingAFalseStep) {
  Prefetcher p(small_config());
  p.observe(file(1), 0, kMiB);
  p.lost(10);
  p.observe(file(2), 0, kMiB);
  p.observe(file(1), 0, kMiB);
  EXPECT_TRUE(p.next(PlanView{}, 0, 0).empty()) << "1 -> 2 was never seen";
  EXPECT_EQ(p.stats().lost_reads, 10u);
}

}  // namespace
}  // namespace mlos::prefetch
