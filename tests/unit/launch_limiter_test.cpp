// SPDX-License-Identifier: Apache-2.0
// The compute share's controller on a made-up GPU: utilization follows the
// admitted launch rate (each launch keeps the GPU busy for a fixed time),
// the clock is simulated, and the limiter must bring the job's share to
// its target from above, let it grow back when the job's demand allows,
// and lift the limit when it no longer binds.
#include "gpushare/launch_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mlos::gpushare {
namespace {

constexpr int64_t kMs = 1000000;

// A job that launches back to back (`demand` launches/s when unlimited),
// each launch worth `busy_ns` of GPU time; returns its utilization over
// `seconds`, sampled every 100 ms, the way the watcher feeds the limiter.
struct SimulatedJob {
  LaunchLimiter& limiter;
  double demand;
  int64_t busy_ns;
  int64_t now = 1;

  double run(double seconds) {
    double busy_total = 0;
    const int64_t end = now + static_cast<int64_t>(seconds * 1e9);
    int64_t period_start = now;
    double period_busy = 0;
    const int64_t gap = static_cast<int64_t>(1e9 / demand);
    while (now < end) {
      const int64_t wait = limiter.admit(now);
      now += std::max<int64_t>(wait, 0) + gap;
      period_busy += static_cast<double>(busy_ns);
      busy_total += static_cast<double>(busy_ns);
      if (now - period_start >= 100 * kMs) {
        limiter.on_sample(std::min(1.0, period_busy / static_cast<double>(now - period_start)), now);
        period_start = now;
        period_busy = 0;
      }
    }
    return busy_total / (seconds * 1e9);
  }
};

TEST(LaunchLimiter, UnlimitedUntilTheFirstSampleAboveTheShare) {
  LaunchLimiter limiter(0.5);
  EXPECT_EQ(limiter.rate(), 0);
  EXPECT_EQ(limiter.admit(1), 0);
  limiter.on_sample(0.9, 100 * kMs);  // the first sample only starts the clock
  EXPECT_EQ(limiter.rate(), 0);
}

TEST(LaunchLimiter, BringsAGreedyJobToItsShare) {
  for (double share : {0.25, 0.5, 0.75}) {
    LaunchLimiter limiter(share);
    SimulatedJob job{limiter, 1000, 1 * kMs};  // would keep the GPU 100 % busy
    job.run(3);                                // converge
    const double settled = job.run(5);
    EXPECT_NEAR(settled, share, 0.05) << "share " << share;
    EXPECT_GT(limiter.rate(), 0);
  }
}

TEST(LaunchLimiter, AJobUnderItsShareIsNeverDelayed) {
  LaunchLimiter limiter(0.5);
  SimulatedJob job{limiter, 200, 1 * kMs};  // 20 % busy
  EXPECT_NEAR(job.run(3), 0.2, 0.01);
  EXPECT_EQ(limiter.rate(), 0);
}

TEST(LaunchLimiter, LiftsTheLimitWhenDemandFalls) {
  LaunchLimiter limiter(0.5);
  SimulatedJob job{limiter, 1000, 1 * kMs};
  job.run(3);
  ASSERT_GT(limiter.rate(), 0);
  job.demand = 100;  // a data-loading stretch: 10 % busy
  job.run(5);
  EXPECT_EQ(limiter.rate(), 0);
}

TEST(LaunchLimiter, NeverStopsAJob) {
  LaunchLimiter limiter(0.01);
  SimulatedJob job{limiter, 1000, 100 * kMs};  // every launch is a long kernel
  job.run(10);
  EXPECT_GE(limiter.rate(), LaunchLimiter::kMinRate);
}

TEST(LaunchLimiter, WaitsGrowWithTheQueueOfLaunches) {
  LaunchLimiter limiter(0.5);
  SimulatedJob job{limiter, 1000, 1 * kMs};
  job.run(2);
  const double rate = limiter.rate();
  ASSERT_GT(rate, 0);
  // A burst at one instant: the bucket empties, then each launch waits one
  // more interval than the one before it.
  int64_t previous = -1;
  int waited = 0;
  for (int i = 0; i < 50; ++i) {
    const int64_t wait = limiter.admit(job.now);
    if (wait > 0) {
      EXPECT_GT(wait, previous);
      previous = wait;
      ++waited;
    }
  }
  EXPECT_GT(waited, 40);
}

}  // namespace
}  // namespace mlos::gpushare
