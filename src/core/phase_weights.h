/* SPDX-License-Identifier: Apache-2.0 */
// How the phases of concurrent jobs become CPU weights (cgroup cpu.weight,
// v1 cpu.shares) on the CPUs they share: the table of the phase-weights
// policy and of mlosd's fallback when that policy is not attached. A job in
// BACKWARD or CHECKPOINT outweighs one in IDLE or DATA_LOADING; the job's
// priority scales its weight. Configurable from the daemon's JSON config
// ("arbitration"). Pure logic.
#pragma once

#include <array>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "mlos/training.h"

namespace mlos {

class PhaseWeights {
 public:
  // IDLE 10, DATA_LOADING 50, FORWARD 100, BACKWARD 200, OPTIMIZER 100,
  // CHECKPOINT 400 (v2 weights; 100 is the kernel's default).
  static PhaseWeights defaults();

  // {"phase_weights": {"BACKWARD": 300, ...}}: phases not named keep their
  // default. INVALID_ARGUMENT for unknown keys or phase names, or weights
  // outside 1..10000 (the config is rejected whole).
  static Result<PhaseWeights> from_json(const nlohmann::json& config);

  // The phase's weight scaled by (100 + 10 * priority) / 100 for priority in
  // MLOS_PRIORITY_MIN..MAX, clamped to 1..10000.
  uint32_t weight(mlos_training_phase_t phase, int priority) const;

 private:
  std::array<uint32_t, MLOS_TRAINING_PHASE_COUNT> phase_weight_{};
};

}  // namespace mlos
