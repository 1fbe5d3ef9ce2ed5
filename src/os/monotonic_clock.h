/* SPDX-License-Identifier: Apache-2.0 */
// The monotonic clock every part of mlOS reads (CLOCK_MONOTONIC through
// std::chrono::steady_clock), and a hand-moved one for tests. Parts take a
// MonotonicClock so that a test can put time where it wants it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace mlos::os {

// Nanoseconds since an arbitrary fixed point; never goes back.
uint64_t monotonic_ns();

// Monotonic nanoseconds, the type every injectable clock has.
using MonotonicClock = std::function<uint64_t()>;

// A clock that moves only when told. Copies share the time, so a test keeps
// one and hands clock() to the part under test. Thread-safe.
class ManualClock {
 public:
  // 1000 s: never near 0, where "never happened" often lives.
  explicit ManualClock(uint64_t start_ns = 1000'000'000'000) : now_(std::make_shared<std::atomic<uint64_t>>(start_ns)) {}
  uint64_t now_ns() const { return now_->load(); }
  // Moves the time on; returns the new time.
  uint64_t advance_ns(uint64_t ns) { return now_->fetch_add(ns) + ns; }
  uint64_t advance_ms(uint64_t ms) { return advance_ns(ms * 1'000'000); }
  // A MonotonicClock that reads this clock (and its copies).
  MonotonicClock clock() const {
    return [now = now_] { return now->load(); };
  }

 private:
  std::shared_ptr<std::atomic<uint64_t>> now_;
};

}  // namespace mlos::os
