// SPDX-License-Identifier: Apache-2.0
#include "tmm/size_classes.h"

#include <bit>

namespace mlos::tmm {

namespace {
constexpr uint64_t kSmallLimit = 4 * kPageBytes;  // 16 KiB: page multiples up to here
constexpr int kSmallClasses = 4;
constexpr int kSmallLimitLog2 = 14;
constexpr int kMaxLog2 = 62;
}  // namespace

int size_class(uint64_t bytes) {
  if (bytes <= kSmallLimit) return bytes == 0 ? 0 : static_cast<int>((bytes - 1) / kPageBytes);
  // 2^k < bytes <= 2^(k+1); the classes of that doubling are 2^k + m * 2^(k-2), m = 1..4.
  const int k = 63 - std::countl_zero(bytes - 1);
  const uint64_t step = uint64_t{1} << (k - 2);
  const uint64_t m = (bytes - (uint64_t{1} << k) + step - 1) / step;
  return kSmallClasses + (k - kSmallLimitLog2) * 4 + static_cast<int>(m) - 1;
}

uint64_t class_bytes(int index) {
  if (index < kSmallClasses) return static_cast<uint64_t>(index + 1) * kPageBytes;
  const int k = kSmallLimitLog2 + (index - kSmallClasses) / 4;
  const uint64_t m = static_cast<uint64_t>((index - kSmallClasses) % 4 + 1);
  return (uint64_t{1} << k) + m * (uint64_t{1} << (k - 2));
}

uint64_t class_alignment(int index) { return class_bytes(index) >= kHugePageBytes ? kHugePageBytes : kPageBytes; }

int class_count() { return size_class(uint64_t{1} << kMaxLog2) + 1; }

}  // namespace mlos::tmm
