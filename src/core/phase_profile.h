/* SPDX-License-Identifier: Apache-2.0 */
// Counts and times phases for one job. Pure: the caller passes timestamps
// (monotonic nanoseconds), so tests drive it with a fake clock.
#pragma once

#include <array>
#include <cstdint>

#include "mlos/training.h"

namespace mlos {

class PhaseProfile {
 public:
  explicit PhaseProfile(uint64_t now_ns, mlos_training_phase_t initial = MLOS_TRAINING_PHASE_IDLE)
      : current_(initial), since_ns_(now_ns) {}

  // Records a set_phase call at `now_ns`. Entering the current phase again is
  // counted as a call, not as an entry. Returns true if the phase changed.
  bool enter(mlos_training_phase_t phase, uint64_t now_ns);
  void count_os_update() { ++os_updates_; }

  mlos_training_phase_t current() const { return current_; }
  // Nanoseconds spent in each phase, with the current one counted up to now.
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> nanoseconds(uint64_t now_ns) const;
  const std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT>& entries() const { return entries_; }
  uint64_t calls() const { return calls_; }
  uint64_t os_updates() const { return os_updates_; }

 private:
  mlos_training_phase_t current_;
  uint64_t since_ns_;
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> spent_ns_{};
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> entries_{};
  uint64_t calls_ = 0;
  uint64_t os_updates_ = 0;
};

}  // namespace mlos
