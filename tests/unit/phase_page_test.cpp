// SPDX-License-Identifier: Apache-2.0
// The phase page's seqlock protocol: what a reader sees after each publish,
// and that concurrent reads never observe a half-written record; its
// activity counters: exact totals from concurrent writers, and no figures
// from a page whose writer predates them.
#include "core/phase_page.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

namespace mlos {
namespace {

struct alignas(64) Page {
  unsigned char bytes[4096] = {};
};

TEST(PhasePageTest, UnwrittenPageReadsAsNothing) {
  auto page = std::make_unique<Page>();
  EXPECT_FALSE(PhasePageReader(page.get()).read().has_value());
}

TEST(PhasePageTest, ReaderSeesPhasesTimesAndCounts) {
  auto page = std::make_unique<Page>();
  PhasePageWriter w(page.get(), 1000);
  PhasePageReader r(page.get());
  auto s0 = r.read();
  ASSERT_TRUE(s0.has_value());
  EXPECT_EQ(s0->phase, MLOS_TRAINING_PHASE_IDLE);
  EXPECT_EQ(s0->set_phase_calls, 0u);

  w.publish(MLOS_TRAINING_PHASE_FORWARD, 1500);
  w.publish(MLOS_TRAINING_PHASE_FORWARD, 1600);  // a call, not an entry
  w.publish(MLOS_TRAINING_PHASE_BACKWARD, 2000);
  auto s = r.read();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->phase, MLOS_TRAINING_PHASE_BACKWARD);
  EXPECT_EQ(s->entered_ns, 2000u);
  EXPECT_EQ(s->phase_ns[MLOS_TRAINING_PHASE_IDLE], 500u);
  EXPECT_EQ(s->phase_ns[MLOS_TRAINING_PHASE_FORWARD], 500u);
  EXPECT_EQ(s->phase_ns[MLOS_TRAINING_PHASE_BACKWARD], 0u);  // still running
  EXPECT_EQ(s->entries[MLOS_TRAINING_PHASE_FORWARD], 1u);
  EXPECT_EQ(s->entries[MLOS_TRAINING_PHASE_BACKWARD], 1u);
  EXPECT_EQ(s->set_phase_calls, 3u);
}

TEST(PhasePageTest, ConcurrentReadsAreNeverTorn) {
  // The writer changes phase on every call and time advances by 1 per call,
  // so in any consistent snapshot: entries sum to the calls, and the time in
  // completed visits equals entered_ns minus the start.
  auto page = std::make_unique<Page>();
  PhasePageWriter w(page.get(), 0);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> checked{0}, torn{0};
  std::thread reader([&] {
    PhasePageReader r(page.get());
    while (!done.load()) {
      auto s = r.read();
      if (!s) continue;
      const uint64_t entries = std::accumulate(s->entries.begin(), s->entries.end(), uint64_t{0});
      const uint64_t time = std::accumulate(s->phase_ns.begin(), s->phase_ns.end(), uint64_t{0});
      if (entries != s->set_phase_calls || time != s->entered_ns) ++torn;
      ++checked;
    }
  });
  const mlos_training_phase_t cycle[] = {MLOS_TRAINING_PHASE_DATA_LOADING, MLOS_TRAINING_PHASE_FORWARD,
                                         MLOS_TRAINING_PHASE_BACKWARD, MLOS_TRAINING_PHASE_OPTIMIZER};
  // 2M publishes take a few ms; on a loaded machine the reader may not have
  // run by then, so the writer goes on (yielding now and then) until the
  // reader has checked some snapshots, for at most 10 s.
  uint64_t published = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (published < 2'000'000 || (checked.load() < 100 && std::chrono::steady_clock::now() < deadline)) {
    ++published;
    w.publish(cycle[published % 4], published);
    if (published > 2'000'000 && published % 4096 == 0) std::this_thread::yield();
  }
  done = true;
  reader.join();
  EXPECT_GT(checked.load(), 0u);
  EXPECT_EQ(torn.load(), 0u);
  auto last = PhasePageReader(page.get()).read();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->set_phase_calls, published);
}


TEST(PhasePageTest, FreshPageHasActivityAtZero) {
  auto page = std::make_unique<Page>();
  PhasePageWriter w(page.get(), 0);
  EXPECT_EQ(reinterpret_cast<PhasePageLayout*>(page.get())->activity_version.load(),
            PhasePageLayout::kActivityVersion);
  auto s = PhasePageReader(page.get()).read();
  ASSERT_TRUE(s.has_value());
  ASSERT_TRUE(s->activity.has_value());
  EXPECT_EQ(s->activity->collective_calls, 0u);
  EXPECT_EQ(s->activity->collective_bytes, 0u);
  EXPECT_EQ(s->activity->collective_ns, 0u);
  EXPECT_EQ(s->activity->checkpoint_saves, 0u);
  EXPECT_EQ(s->activity->checkpoint_bytes, 0u);
  EXPECT_EQ(s->activity->checkpoint_ns, 0u);
}

TEST(PhasePageTest, ActivityCountsAddUpAndStayApart) {
  auto page = std::make_unique<Page>();
  PhasePageWriter w(page.get(), 0);
  w.count_collective(400, 10);
  w.count_collective(0, 5);  // a barrier
  w.count_checkpoint(1 << 20, 700);
  w.publish(MLOS_TRAINING_PHASE_FORWARD, 50);  // phases and counters do not disturb each other
  auto s = PhasePageReader(page.get()).read();
  ASSERT_TRUE(s.has_value() && s->activity.has_value());
  EXPECT_EQ(s->set_phase_calls, 1u);
  EXPECT_EQ(s->activity->collective_calls, 2u);
  EXPECT_EQ(s->activity->collective_bytes, 400u);
  EXPECT_EQ(s->activity->collective_ns, 15u);
  EXPECT_EQ(s->activity->checkpoint_saves, 1u);
  EXPECT_EQ(s->activity->checkpoint_bytes, uint64_t{1} << 20);
  EXPECT_EQ(s->activity->checkpoint_ns, 700u);
}

TEST(PhasePageTest, ActivityFromConcurrentThreadsLosesNothing) {
  // Collectives and checkpoint saves count from threads other than the one
  // that publishes phases; every add must land, while phases go on.
  auto page = std::make_unique<Page>();
  PhasePageWriter w(page.get(), 0);
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 50'000;
  std::vector<std::thread> counters;
  for (int t = 0; t < kThreads; ++t) {
    counters.emplace_back([&w, t] {
      for (uint64_t i = 1; i <= kEach; ++i) {
        if (t % 2 == 0) {
          w.count_collective(i, 1);
        } else {
          w.count_checkpoint(2 * i, 3);
        }
      }
    });
  }
  for (uint64_t i = 1; i <= 10'000; ++i) {
    w.publish(i % 2 ? MLOS_TRAINING_PHASE_FORWARD : MLOS_TRAINING_PHASE_BACKWARD, i);
  }
  for (auto& t : counters) t.join();
  auto s = PhasePageReader(page.get()).read();
  ASSERT_TRUE(s.has_value() && s->activity.has_value());
  const uint64_t sum = kEach * (kEach + 1) / 2;
  EXPECT_EQ(s->activity->collective_calls, 2 * kEach);
  EXPECT_EQ(s->activity->collective_bytes, 2 * sum);
  EXPECT_EQ(s->activity->collective_ns, 2 * kEach);
  EXPECT_EQ(s->activity->checkpoint_saves, 2 * kEach);
  EXPECT_EQ(s->activity->checkpoint_bytes, 2 * 2 * sum);
  EXPECT_EQ(s->activity->checkpoint_ns, 2 * 3 * kEach);
  EXPECT_EQ(s->set_phase_calls, 10'000u);
}

TEST(PhasePageTest, PageOfAnOlderWriterHasNoActivity) {
  // A library from before the counters leaves activity_version 0 (the
  // page is zero-filled): phases read as before, activity as "unknown",
  // not as zeros that look measured.
  auto page = std::make_unique<Page>();
  PhasePageWriter w(page.get(), 0);
  auto* layout = reinterpret_cast<PhasePageLayout*>(page.get());
  layout->activity_version.store(0);
  layout->collective_calls.store(7);  // whatever lies there is not taken as a figure
  w.publish(MLOS_TRAINING_PHASE_FORWARD, 10);
  auto s = PhasePageReader(page.get()).read();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->phase, MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_FALSE(s->activity.has_value());
}

}  // namespace
}  // namespace mlos
