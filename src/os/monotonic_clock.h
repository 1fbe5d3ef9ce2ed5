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
  explicit ManualClock(uint64_t start_ns = 1'000'000'000) : now_(std::make_shared<std::atomic<uint64_t>>(start_ns)) {}
  uint64_t now() const { return now_->load(); }
  void advance(uint64_t ns) { now_->fetch_add(ns); }
  void set(uint64_t ns) { now_->store(ns); }
  MonotonicClock clock() const {
    return [now = now_] { return now->load(); };
  }

 private:
  std::shared_ptr<std::atomic<uint64_t>> now_;
};

}  // namespace mlos::os
