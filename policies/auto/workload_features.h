/* SPDX-License-Identifier: Apache-2.0 */
// The features `auto` classifies a job by, computed from two samples of the
// job's figures (mlos_policy_job_figures_t) a window apart: what share of
// the window each phase took, the job's CPU use and its neighbours' on its
// CPUs, memory pressure and fill, communication share, and how often it
// changes phase. The training script (bench/auto/train.py) reads the same
// names from the recorded reports, so the order and meaning here are the
// model file's contract: a model naming other features is refused.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <mlos/policy.h>

namespace mlos::autopolicy {

enum Feature {
  kDataLoadingShare,   // DATA_LOADING seconds / window
  kComputeShare,       // FORWARD + BACKWARD + OPTIMIZER seconds / window
  kBackwardOfCompute,  // BACKWARD / (FORWARD + BACKWARD + OPTIMIZER); 0 without compute
  kIdleShare,          // IDLE seconds / window
  kCheckpointShare,    // CHECKPOINT seconds / window
  kCollectiveShare,    // seconds in barriers and all-reduces / window; 0 unknown
  kJobCpuUse,          // the job's CPU seconds / (window x its CPUs); -1 unknown
  kOthersCpuUse,       // other work's busy seconds on the job's CPUs / (window x CPUs); -1 unknown
  kMemoryPressure,     // mlos_memory_pressure_level_t; -1 not watched
  kMemoryFill,         // memory in use / its limit; 0 no limit or unknown
  kPhaseChangesPerSecond,
  kFeatureCount
};

constexpr std::array<const char*, kFeatureCount> kFeatureNames = {
    "data_loading_share", "compute_share",   "backward_of_compute", "idle_share",  "checkpoint_share",
    "collective_share",   "job_cpu_use",     "others_cpu_use",      "memory_pressure", "memory_fill",
    "phase_changes_per_second"};

using FeatureVector = std::array<double, kFeatureCount>;

// The features of the window from `before` to `after` (the same job, a
// later sample). nullopt when the window is empty or runs backwards.
std::optional<FeatureVector> features_between(const mlos_policy_job_figures_t& before,
                                              const mlos_policy_job_figures_t& after);

}  // namespace mlos::autopolicy
