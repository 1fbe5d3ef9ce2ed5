// SPDX-License-Identifier: Apache-2.0
#include "dataload/worker_governor.h"

#include <algorithm>

namespace mlos::dataload {

WorkerGovernor::WorkerGovernor(uint32_t max_workers, uint32_t slots)
    : max_(std::max(1u, max_workers)), slots_(std::max(1u, slots)), active_(max_) {}

uint32_t WorkerGovernor::on_release(uint32_t ready, double wait_share) {
  if (wait_share > kStarvedShare || ready == 0) {
    active_ = std::min(max_, active_ + 1);
  } else if (wait_share < kFedShare && 2 * ready >= slots_) {
    active_ = std::max(1u, active_ - 1);
  }
  return active_;
}

}  // namespace mlos::dataload
