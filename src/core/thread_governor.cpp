// SPDX-License-Identifier: Apache-2.0
#include "core/thread_governor.h"

#include <algorithm>

namespace mlos {

ThreadGovernor::ThreadGovernor(int cpus, int max_threads, double interval_seconds)
    : cpus_(std::max(1, cpus)), max_threads_(std::max(1, max_threads)), interval_(interval_seconds),
      threads_(max_threads_) {}

std::optional<int> ThreadGovernor::observe(double now, double cpus_busy, double own) {
  if (cpus_busy < 0 || own < 0) return std::nullopt;
  if (have_last_ && now - last_now_ < interval_) return std::nullopt;
  const bool first = !have_last_;
  const double elapsed = now - last_now_, busy = cpus_busy - last_busy_, mine = own - last_own_;
  have_last_ = true;
  last_now_ = now;
  last_busy_ = cpus_busy;
  last_own_ = own;
  if (first || elapsed <= 0) return std::nullopt;
  other_load_ = std::max(0.0, busy - mine) / elapsed;
  const int taken = static_cast<int>(other_load_ + (1 - kTakenShare));
  const int target = std::min(max_threads_, std::max(1, cpus_ - taken));
  const std::optional<int> previous = proposal_;
  proposal_ = target;
  if (target == threads_ || previous != target) return std::nullopt;
  threads_ = target;
  return target;
}

}  // namespace mlos
