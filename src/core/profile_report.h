/* SPDX-License-Identifier: Apache-2.0 */
// The phase profile as a table for people: seconds and share of the job's
// wall time per phase, entries, and the collectives' part. What `mlos run
// --profile` shows at exit (MLOS_PROFILE). Pure: formats what it is given.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "mlos/training.h"

namespace mlos {

struct ProfileFigures {
  uint64_t claim_id = 0;
  int num_cpus = 0;
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> phase_ns{};
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> entries{};
  uint64_t communication_ns = 0;
  uint64_t collective_calls = 0;
  uint64_t collective_bytes = 0;
  // mlos run's start-up choice for the command and why (MLOS_TUNE_CHOICE,
  // MLOS_TUNE_REASON; docs/tuning.md), "" if none.
  std::string tuning;
  std::string tuning_reason;
};

// Lines like
//   mlos profile: claim 7, 4 CPUs, 12.31 s
//     phase            seconds   share  entries
//     DATA_LOADING        7.48   60.8%       10
//   ...
//     (communication)     0.52    4.2%      30 calls, 1.2 MiB
//     tuning: tcmalloc (why)
// Shares are of the sum of the phases (the job's life); communication
// overlaps the phases and is shown apart.
std::string format_profile(const ProfileFigures& f);

}  // namespace mlos
