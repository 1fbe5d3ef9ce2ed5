// SPDX-License-Identifier: Apache-2.0
// binary16 and bfloat16 conversions against known encodings, round trips
// of every half, and ties rounding to even.
#include "collectives/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mlos::collectives {
namespace {

TEST(HalfFloat, KnownEncodings) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(0.5f), 0x3800);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                // largest half
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                // rounds up to inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);   // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -26)), 0x0000);   // below half of it
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

TEST(HalfFloat, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaNs
    EXPECT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(HalfFloat, TiesRoundToEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to 1 (even mantissa).
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: to the even one.
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(BFloat16, KnownEncodingsAndRounding) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-2.0f), 0xc000);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie: to even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie: to even
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;  // NaNs
    EXPECT_EQ(float_to_bfloat16(bfloat16_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace mlos::collectives
