// SPDX-License-Identifier: Apache-2.0
#include "workload_features.h"

#include <algorithm>

namespace mlos::autopolicy {

namespace {

double delta_phase(const mlos_policy_job_figures_t& a, const mlos_policy_job_figures_t& b, int phase) {
  return std::max(0.0, b.phase_seconds[phase] - a.phase_seconds[phase]);
}

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// A counter's growth over the window per second per CPU, or -1 when either
// reading is unknown (negative).
double per_cpu_rate(double before, double after, double window, int cpus) {
  if (before < 0 || after < 0 || cpus <= 0) return -1;
  return std::max(0.0, after - before) / (window * cpus);
}

}  // namespace

std::optional<FeatureVector> features_between(const mlos_policy_job_figures_t& a, const mlos_policy_job_figures_t& b) {
  const double window = b.now_seconds - a.now_seconds;
  if (!(window > 0)) return std::nullopt;
  FeatureVector f{};
  const double loading = delta_phase(a, b, MLOS_TRAINING_PHASE_DATA_LOADING);
  const double backward = delta_phase(a, b, MLOS_TRAINING_PHASE_BACKWARD);
  const double compute = delta_phase(a, b, MLOS_TRAINING_PHASE_FORWARD) + backward +
                         delta_phase(a, b, MLOS_TRAINING_PHASE_OPTIMIZER);
  f[kDataLoadingShare] = clamp01(loading / window);
  f[kComputeShare] = clamp01(compute / window);
  f[kBackwardOfCompute] = compute > 0 ? clamp01(backward / compute) : 0;
  f[kIdleShare] = clamp01(delta_phase(a, b, MLOS_TRAINING_PHASE_IDLE) / window);
  f[kCheckpointShare] = clamp01(delta_phase(a, b, MLOS_TRAINING_PHASE_CHECKPOINT) / window);
  const bool collectives_known = a.collective_seconds >= 0 && b.collective_seconds >= 0;
  f[kCollectiveShare] = collectives_known ? clamp01((b.collective_seconds - a.collective_seconds) / window) : 0;
  const int cpus = b.num_cpus;
  const double job = per_cpu_rate(a.cpu_seconds, b.cpu_seconds, window, cpus);
  const double busy = per_cpu_rate(a.cpus_busy_seconds, b.cpus_busy_seconds, window, cpus);
  f[kJobCpuUse] = job;
  // The CPUs' busy time counts the job's own: what is left is other work's.
  f[kOthersCpuUse] = job < 0 || busy < 0 ? -1 : std::max(0.0, busy - job);
  f[kMemoryPressure] = b.memory_pressure_level;
  f[kMemoryFill] =
      b.memory_known && b.memory_limit_bytes > 0 ? static_cast<double>(b.memory_bytes) / b.memory_limit_bytes : 0;
  uint64_t changes = 0;
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    if (b.phase_entries[p] > a.phase_entries[p]) changes += b.phase_entries[p] - a.phase_entries[p];
  }
  f[kPhaseChangesPerSecond] = static_cast<double>(changes) / window;
  return f;
}

}  // namespace mlos::autopolicy
