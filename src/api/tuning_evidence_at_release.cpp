// SPDX-License-Identifier: Apache-2.0
#include "api/tuning_evidence_at_release.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "os/environment.h"
#include "tune/tuning_store.h"

namespace mlos::api {

void record_step_time_if_asked(const Job& job) {
  const char* path = os::env("MLOS_TUNE_EVIDENCE");
  if (path == nullptr || *path != '/') return;
  auto snap = job.snapshot();
  if (!snap) return;
  const uint64_t steps = snap->entries[MLOS_TRAINING_PHASE_OPTIMIZER];
  if (steps == 0) return;
  uint64_t busy_ns = 0;
  for (auto phase : {MLOS_TRAINING_PHASE_DATA_LOADING, MLOS_TRAINING_PHASE_FORWARD, MLOS_TRAINING_PHASE_BACKWARD,
                     MLOS_TRAINING_PHASE_OPTIMIZER}) {
    busy_ns += snap->phase_ns[phase];
  }
  const nlohmann::json line = {{"steps", steps}, {"step_ms", static_cast<double>(busy_ns) / 1e6 / steps}};
  (void)tune::append_line(path, line.dump());
}

}  // namespace mlos::api
