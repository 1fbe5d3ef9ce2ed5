/* SPDX-License-Identifier: Apache-2.0 */
// The random numbers the augmentations draw, behind an interface so a test
// can replay exactly the values torch drew (see crop_sampler.h).
#pragma once

#include <cstdint>
#include <random>

namespace mlos::dataload {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A value in [lo, hi), as `torch.empty(1).uniform_(lo, hi).item()`
  // returns it: torch draws into a float32 tensor, so a torch-faithful
  // source rounds its result to float (SeededRandom does). Callers never
  // rely on that rounding for correctness, only for bit-equality with torch.
  virtual double uniform(double lo, double hi) = 0;
  // An integer in [lo, hi_exclusive), as `torch.randint(lo, hi, (1,))`.
  // Requires lo < hi_exclusive.
  virtual int64_t randint(int64_t lo, int64_t hi_exclusive) = 0;
};

// The production source: a 64-bit Mersenne Twister seeded per worker.
// Statistically like torch's generator, not the same stream.
class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(uint64_t seed) : engine_(seed) {}
  double uniform(double lo, double hi) override {
    // 24 random bits, as torch's float uniform_ uses, then float rounding.
    const double unit = static_cast<double>(engine_() >> 40) * 0x1.0p-24;
    return static_cast<float>(lo + (hi - lo) * unit);
  }
  int64_t randint(int64_t lo, int64_t hi_exclusive) override {
    return std::uniform_int_distribution<int64_t>(lo, hi_exclusive - 1)(engine_);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace mlos::dataload
