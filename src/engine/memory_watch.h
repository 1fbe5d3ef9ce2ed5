/* SPDX-License-Identifier: Apache-2.0 */
// One job's memory watching: a thread ("mlos-memwatch") that waits on its
// feed's descriptors (or the sample interval), asks the feed for the
// current report, and delivers level changes to the job's callbacks.
// Created on the first callback registration; stopped at release.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "engine/memory_callbacks.h"
#include "engine/pressure_feed.h"

namespace mlos {

class MemoryWatch {
 public:
  using Clock = std::function<uint64_t()>;
  // Starts the thread. SYSTEM if it cannot be started.
  static Result<std::shared_ptr<MemoryWatch>> start(std::unique_ptr<PressureFeed> feed, Clock clock);
  ~MemoryWatch();

  Status add(mlos_memory_callback_t cb, void* user_data);
  Status remove(mlos_memory_callback_t cb, void* user_data);
  Status set_thresholds(const MemoryThresholds& t);
  // The latest report (sampled now if the thread has not sampled yet).
  Result<PressureReport> current();
  // Unregisters every callback and ends the thread: joined, or, when called
  // from a callback on the thread itself, left to end after that call.
  void stop();
  // Degraded sources and callback problems, "; "-separated; "" if none.
  std::string notes() const;

  struct State;

 private:
  explicit MemoryWatch(std::shared_ptr<State> s) : s_(std::move(s)) {}
  std::shared_ptr<State> s_;
};

}  // namespace mlos
