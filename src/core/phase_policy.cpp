// SPDX-License-Identifier: Apache-2.0
#include "core/phase_policy.h"

#include <algorithm>

namespace mlos {

const PhasePolicy& PhasePolicy::defaults() {
  using IO = IoPriority;
  static const PhasePolicy policy({{
      /* IDLE         */ {+10, {IO::kIdle, 0}, BufferLockAction::kUnlock},
      /* DATA_LOADING */ {+5, {IO::kBestEffort, 0}, BufferLockAction::kKeep},
      /* FORWARD      */ {0, {IO::kBestEffort, 4}, BufferLockAction::kKeep},
      /* BACKWARD     */ {-5, {IO::kBestEffort, 4}, BufferLockAction::kLock},
      /* OPTIMIZER    */ {0, {IO::kBestEffort, 4}, BufferLockAction::kKeep},
      /* CHECKPOINT   */ {-10, {IO::kBestEffort, 0}, BufferLockAction::kKeep},
  }});
  return policy;
}

ThreadSettings PhasePolicy::settings_for(mlos_training_phase_t phase, int base_nice, int priority) const {
  const PhaseRule& r = rules_[phase];
  return ThreadSettings{std::clamp(base_nice + r.nice_offset - priority, -20, 19), r.io};
}

const char* PhasePolicy::name(int phase) {
  static const char* const kNames[] = {"IDLE", "DATA_LOADING", "FORWARD", "BACKWARD", "OPTIMIZER", "CHECKPOINT"};
  return valid_phase(phase) ? kNames[phase] : "UNKNOWN";
}

}  // namespace mlos
