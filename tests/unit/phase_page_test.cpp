// The phase page's seqlock protocol: what a reader sees after each publish,
// and that concurrent reads never observe a half-written record.
#include "core/phase_page.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <thread>

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

}  // namespace
}  // namespace mlos
