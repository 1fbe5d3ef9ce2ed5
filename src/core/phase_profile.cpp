// SPDX-License-Identifier: Apache-2.0
#include "core/phase_profile.h"

namespace mlos {

bool PhaseProfile::enter(mlos_training_phase_t phase, uint64_t now_ns) {
  ++calls_;
  if (phase == current_) return false;
  // A clock that went backwards (it should not: callers use a monotonic
  // clock) contributes nothing rather than a huge unsigned difference.
  if (now_ns > since_ns_) spent_ns_[current_] += now_ns - since_ns_;
  since_ns_ = now_ns;
  current_ = phase;
  ++entries_[phase];
  return true;
}

std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> PhaseProfile::nanoseconds(uint64_t now_ns) const {
  auto out = spent_ns_;
  if (now_ns > since_ns_) out[current_] += now_ns - since_ns_;
  return out;
}

}  // namespace mlos
