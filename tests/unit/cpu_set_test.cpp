// SPDX-License-Identifier: Apache-2.0
// CpuSet: the kernel list format ("0-3,8,10-11") and set algebra.
#include "core/cpu_set.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mlos {
namespace {

CpuSet parse_ok(std::string_view text) {
  auto r = CpuSet::parse_list(text);
  EXPECT_TRUE(r.ok()) << "\"" << text << "\": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : CpuSet();
}

TEST(CpuSetTest, ParsesSingleRangesAndMixedLists) {
  EXPECT_EQ(parse_ok("7").to_vector(), std::vector<int>({7}));
  EXPECT_EQ(parse_ok("0-3").to_vector(), std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(parse_ok("0-3,5").to_vector(), std::vector<int>({0, 1, 2, 3, 5}));
  EXPECT_EQ(parse_ok("0-1,8,10-11").to_vector(), std::vector<int>({0, 1, 8, 10, 11}));
  EXPECT_EQ(parse_ok("4-4").to_vector(), std::vector<int>({4}));
}

TEST(CpuSetTest, ParsesCpusBeyondOneWord) {
  CpuSet s = parse_ok("63-65,127,128");
  EXPECT_EQ(s.to_vector(), std::vector<int>({63, 64, 65, 127, 128}));
  EXPECT_EQ(s.count(), 5);
  EXPECT_EQ(s.extent(), 129);
  EXPECT_EQ(s.to_list(), "63-65,127-128");
}

TEST(CpuSetTest, EmptyTextAndTrailingNewlineAreAccepted) {
  EXPECT_TRUE(parse_ok("").empty());
  EXPECT_TRUE(parse_ok("\n").empty());
  // As read from /proc/<pid>/status or cpuset.cpus: trailing newline.
  EXPECT_EQ(parse_ok("0-2,6\n").to_list(), "0-2,6");
}

TEST(CpuSetTest, UnorderedAndOverlappingItemsMerge) {
  EXPECT_EQ(parse_ok("8,0-3,2-5").to_list(), "0-5,8");
}

TEST(CpuSetTest, RejectsMalformedLists) {
  for (const char* bad : {"3-1", "a", "1,,2", "-1", "1-", "1,", ",1", "0-3,x", "1 2", "0x3", "1-2-3", "+1",
                          "99999999"}) {
    auto r = CpuSet::parse_list(bad);
    ASSERT_FALSE(r.ok()) << "accepted \"" << bad << "\"";
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(CpuSetTest, ToListCollapsesRuns) {
  EXPECT_EQ(CpuSet().to_list(), "");
  EXPECT_EQ(CpuSet::of({5}).to_list(), "5");
  EXPECT_EQ(CpuSet::of({0, 1}).to_list(), "0-1");
  EXPECT_EQ(CpuSet::of({0, 2, 4}).to_list(), "0,2,4");
  EXPECT_EQ(CpuSet::of({0, 1, 2, 3, 8, 10, 11}).to_list(), "0-3,8,10-11");
}

TEST(CpuSetTest, ListRoundTrips) {
  for (const char* text : {"0", "0-3", "0-3,8,10-11", "1,3,5,7", "0-127", "64", "200-202,300"}) {
    EXPECT_EQ(parse_ok(text).to_list(), text);
  }
}

TEST(CpuSetTest, SetResetTestCountExtent) {
  CpuSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.count(), 0);
  EXPECT_EQ(s.extent(), 0);
  s.set(3);
  s.set(70);
  s.set(3);  // idempotent
  EXPECT_EQ(s.count(), 2);
  EXPECT_TRUE(s.test(3));
  EXPECT_TRUE(s.test(70));
  EXPECT_FALSE(s.test(4));
  EXPECT_FALSE(s.test(-1));
  EXPECT_FALSE(s.test(1000));
  EXPECT_EQ(s.extent(), 71);
  s.reset(70);
  EXPECT_EQ(s.extent(), 4);
  s.reset(500);  // absent, beyond storage: no-op
  EXPECT_EQ(s.count(), 1);
  s.reset(3);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.extent(), 0);
}

TEST(CpuSetTest, RangeAndOf) {
  EXPECT_EQ(CpuSet::range(2, 5).to_vector(), std::vector<int>({2, 3, 4, 5}));
  EXPECT_EQ(CpuSet::range(3, 3).to_vector(), std::vector<int>({3}));
  EXPECT_TRUE(CpuSet::range(5, 4).empty());
  EXPECT_EQ(CpuSet::of({9, 1, 5}).to_vector(), std::vector<int>({1, 5, 9}));
}

TEST(CpuSetTest, SetAlgebra) {
  CpuSet a = CpuSet::range(0, 7);
  CpuSet b = CpuSet::of({4, 5, 6, 7, 8, 100});
  EXPECT_EQ((a & b).to_list(), "4-7");
  EXPECT_EQ((b & a).to_list(), "4-7");
  EXPECT_EQ((a | b).to_list(), "0-8,100");
  EXPECT_EQ((b | a).to_list(), "0-8,100");
  EXPECT_EQ(a.minus(b).to_list(), "0-3");
  EXPECT_EQ(b.minus(a).to_list(), "8,100");
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE(CpuSet::of({0, 1}).intersects(CpuSet::of({2, 3})));
  EXPECT_FALSE(CpuSet().intersects(a));
  EXPECT_TRUE(CpuSet::of({1, 2}).is_subset_of(a));
  EXPECT_FALSE(b.is_subset_of(a));
  EXPECT_TRUE(CpuSet().is_subset_of(CpuSet()));
  // Intersection that empties the high words leaves a set whose extent is
  // that of what remains.
  EXPECT_EQ((CpuSet::of({1, 100}) & CpuSet::of({1, 200})).extent(), 2);
}

TEST(CpuSetTest, EqualityIgnoresStorageWidth) {
  CpuSet wide = CpuSet::of({1, 130});
  wide.reset(130);
  EXPECT_EQ(wide, CpuSet::of({1}));
  CpuSet grown = CpuSet::of({2}) | CpuSet::of({200}).minus(CpuSet::of({200}));
  EXPECT_EQ(grown, CpuSet::of({2}));
  EXPECT_FALSE(CpuSet::of({1}) == CpuSet::of({2}));
  EXPECT_FALSE(CpuSet::of({1}) == CpuSet());
}

}  // namespace
}  // namespace mlos
