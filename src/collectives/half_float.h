/* SPDX-License-Identifier: Apache-2.0 */
// IEEE 754 binary16 ("half") and bfloat16 <-> float32, rounding to nearest
// even, as hardware does: the element types of half-precision gradients.
// Reductions on them widen to float32, combine, and narrow back.
#pragma once

#include <cstdint>
#include <cstring>

namespace mlos::collectives {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float bfloat16_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

inline uint16_t float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // to nearest, ties to even
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);  // +-0
  // Subnormal: normalise.
  int e = -1;
  do {
    mant <<= 1;
    ++e;
  } while ((mant & 0x400u) == 0);
  return bits_float(sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13));
}

inline uint16_t float_to_half(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal or zero.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: 0
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14 + 23 - 10 + ... places the value in units of 2^-24
    const uint32_t half_mant = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    uint32_t r = half_mant + ((rest > halfway || (rest == halfway && (half_mant & 1))) ? 1 : 0);
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits.
  uint32_t v = abs - (112u << 23);
  v += 0xfffu + ((v >> 13) & 1u);
  return static_cast<uint16_t>(sign | (v >> 13));
}

}  // namespace mlos::collectives
