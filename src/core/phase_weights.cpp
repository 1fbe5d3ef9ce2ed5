// SPDX-License-Identifier: Apache-2.0
#include "core/phase_weights.h"

#include <algorithm>

#include "core/phase_policy.h"

namespace mlos {

PhaseWeights PhaseWeights::defaults() {
  PhaseWeights p;
  p.phase_weight_ = {10, 50, 100, 200, 100, 400};
  return p;
}

Result<PhaseWeights> PhaseWeights::from_json(const nlohmann::json& config) {
  PhaseWeights p = defaults();
  if (!config.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "arbitration config must be an object");
  for (const auto& [key, value] : config.items()) {
    if (key != "phase_weights") {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown arbitration setting \"" + key + "\"");
    }
    if (!value.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "phase_weights must be an object");
    for (const auto& [name, w] : value.items()) {
      int phase = -1;
      for (int i = 0; i < MLOS_TRAINING_PHASE_COUNT; ++i) {
        if (name == PhasePolicy::name(i)) phase = i;
      }
      if (phase < 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown phase \"" + name + "\" in phase_weights");
      if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > 10000) {
        return make_error(MLOS_ERR_INVALID_ARGUMENT,
                          "weight of " + name + " must be an integer in 1..10000, got " + w.dump());
      }
      p.phase_weight_[phase] = static_cast<uint32_t>(w.get<int64_t>());
    }
  }
  return p;
}

uint32_t PhaseWeights::weight(mlos_training_phase_t phase, int priority) const {
  const int64_t scaled = int64_t{phase_weight_[phase]} * (100 + 10 * std::clamp(priority, MLOS_PRIORITY_MIN, MLOS_PRIORITY_MAX)) / 100;
  return static_cast<uint32_t>(std::clamp<int64_t>(scaled, 1, 10000));
}

}  // namespace mlos
