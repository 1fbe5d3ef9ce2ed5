// SPDX-License-Identifier: Apache-2.0
// Size classes and the arena's free ranges: the pure logic of tensor pools.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tmm/arena_ranges.h"
#include "tmm/size_classes.h"

using namespace mlos::tmm;

TEST(TmmSizeClasses, EveryRequestFitsItsClassWithLittleWasted) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t bytes = 1 + (rng() >> (rng() % 40 + 20));
    const int cls = size_class(bytes);
    const uint64_t cb = class_bytes(cls);
    ASSERT_GE(cb, bytes) << bytes;
    ASSERT_EQ(cb % kPageBytes, 0u) << bytes;
    if (bytes > 16384) {
      ASSERT_LT(cb - bytes, bytes / 4) << bytes;  // under a quarter of the request
    } else {
      ASSERT_LT(cb - bytes, kPageBytes) << bytes;  // the next page
    }
    if (cls > 0) {
      ASSERT_LT(class_bytes(cls - 1), bytes) << bytes;  // the smallest class that fits
    }
  }
}

TEST(TmmSizeClasses, ClassesAreIncreasingAndRoundTrip) {
  EXPECT_EQ(class_bytes(0), 4096u);
  EXPECT_EQ(class_bytes(size_class(16384)), 16384u);
  EXPECT_EQ(class_bytes(size_class(16385)), 20480u);
  EXPECT_EQ(class_bytes(size_class(32769)), 40960u);
  for (int c = 1; c < class_count(); ++c) {
    ASSERT_GT(class_bytes(c), class_bytes(c - 1));
    ASSERT_EQ(size_class(class_bytes(c)), c);
    ASSERT_EQ(size_class(class_bytes(c - 1) + 1), c);
  }
}

TEST(TmmSizeClasses, HugeClassesAreHugePageAligned) {
  EXPECT_EQ(class_alignment(size_class(2u << 20)), kHugePageBytes);
  EXPECT_EQ(class_alignment(size_class(1792u << 10)), kPageBytes);  // the class below 2 MiB
}

TEST(TmmArenaRanges, CarvesAlignedFirstFitAndCoalescesOnReturn) {
  ArenaRanges r(8 << 20);
  auto a = r.carve(4096, 4096);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, 0u);
  auto b = r.carve(2 << 20, 2 << 20);  // aligned past a: slack [4096, 2 MiB) stays free
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, 2u << 20);
  EXPECT_EQ(r.free_bytes(), (8u << 20) - 4096 - (2u << 20));
  auto c = r.carve(8192, 4096);  // first fit: in the slack
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, 4096u);
  r.give_back(*a, 4096);
  r.give_back(*c, 8192);
  r.give_back(*b, 2 << 20);
  EXPECT_EQ(r.range_count(), 1u);
  EXPECT_EQ(r.largest_free(), 8u << 20);
}

TEST(TmmArenaRanges, RefusesWhatDoesNotFitAndKeepsTheRest) {
  ArenaRanges r(1 << 20);
  std::vector<uint64_t> held;
  for (int i = 0; i < 4; ++i) held.push_back(*r.carve(256 << 10, 4096));
  EXPECT_FALSE(r.carve(4096, 4096));
  EXPECT_EQ(r.free_bytes(), 0u);
  r.give_back(held[1], 256 << 10);
  r.give_back(held[2], 256 << 10);
  EXPECT_EQ(r.largest_free(), 512u << 10);
  EXPECT_FALSE(r.carve(768 << 10, 4096));
  EXPECT_TRUE(r.carve(512 << 10, 4096));
}
