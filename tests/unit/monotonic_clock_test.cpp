// SPDX-License-Identifier: Apache-2.0
// The clock every part reads, and the hand-moved one tests give them.
#include "os/monotonic_clock.h"

#include <gtest/gtest.h>

namespace mlos::os {
namespace {

TEST(MonotonicClockTest, NeverGoesBack) {
  uint64_t last = monotonic_ns();
  for (int i = 0; i < 10000; ++i) {
    const uint64_t now = monotonic_ns();
    ASSERT_GE(now, last);
    last = now;
  }
}

TEST(ManualClockTest, MovesOnlyWhenToldAndItsCopiesAndClocksShareTheTime) {
  ManualClock clock(5);
  const MonotonicClock read = clock.clock();
  ManualClock copy = clock;
  EXPECT_EQ(read(), 5u);
  EXPECT_EQ(copy.advance_ns(10), 15u);
  EXPECT_EQ(clock.advance_ms(2), 2'000'015u);
  EXPECT_EQ(read(), 2'000'015u);
  EXPECT_EQ(copy.now_ns(), 2'000'015u);
}

}  // namespace
}  // namespace mlos::os
