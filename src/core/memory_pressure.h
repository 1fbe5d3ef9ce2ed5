/* SPDX-License-Identifier: Apache-2.0 */
// Memory-pressure levels from measured figures: pure logic, shared by the
// library's watcher thread (embedded mode) and mlosd (daemon mode).
//
// A level is entered as soon as any input says so and left only when every
// input has been clear of the level's exit threshold (the entry threshold
// moved by the hysteresis) continuously for hold_ms. Inputs:
//  - headroom: available / budget of the tightest source (the job's memory
//    cgroup, the node, the job's own memory_bytes);
//  - PSI averages (avg10 of "some" and "full");
//  - kernel events (a PSI trigger or a v1 vmpressure notification fired):
//    they hold their level for hold_ms after they fire.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"
#include "mlos/training.h"

namespace mlos {

struct MemoryThresholds {
  // Headroom fractions at or below which MODERATE / CRITICAL start.
  double moderate_headroom = 0.20;
  double critical_headroom = 0.08;
  // PSI avg10 percentages at or above which MODERATE ("some") and CRITICAL
  // ("full") start; 0 disables that input.
  double moderate_psi_some = 10.0;
  double critical_psi_full = 5.0;
  // Exit thresholds: headroom must exceed entry + hysteresis; PSI must fall
  // below half its entry value.
  double hysteresis = 0.05;
  uint32_t hold_ms = 1000;
  // How often the figures are sampled when no event arrives.
  uint32_t sample_ms = 100;
  // Kernel triggers: stall of psi_trigger_stall_ms within a window of
  // psi_trigger_window_ms (rounded up to a multiple of 2 s where the kernel
  // treats the caller as unprivileged).
  uint32_t psi_trigger_stall_ms = 150;
  uint32_t psi_trigger_window_ms = 2000;

  bool operator==(const MemoryThresholds&) const = default;
};

// INVALID_ARGUMENT naming the bad field: 0 < critical < moderate < 1,
// moderate + hysteresis < 1, hysteresis in [0, 0.5], PSI in [0, 100],
// hold_ms <= 60000, sample_ms in [10, 10000], 0 < stall < window,
// window in [500, 10000] ms.
Status validate(const MemoryThresholds& t);

// Defaults overridden by environment variables (read through `getenv`):
// MLOS_MEMORY_MODERATE / MLOS_MEMORY_CRITICAL (headroom, percent),
// MLOS_MEMORY_PSI_SOME / MLOS_MEMORY_PSI_FULL (percent), MLOS_MEMORY_HOLD_MS,
// MLOS_MEMORY_SAMPLE_MS. A malformed or inconsistent value is an error
// naming the variable.
Result<MemoryThresholds> thresholds_from_env(const MemoryThresholds& base,
                                             const std::function<const char*(const char*)>& getenv);

// Where the tightest headroom was measured.
enum class MemorySource { kNone = 0, kJob = 1, kCgroup = 2, kNode = 3 };
const char* memory_source_name(MemorySource s);

struct MemoryFigures {
  uint64_t available_bytes = UINT64_MAX;  // of the tightest source
  uint64_t budget_bytes = 0;              // its total; 0 = no source known
  MemorySource source = MemorySource::kNone;
  double psi_some_avg10 = 0;
  double psi_full_avg10 = 0;

  // Keeps the source with the smaller headroom fraction.
  void consider(uint64_t available, uint64_t budget, MemorySource from);
  double headroom() const;  // available / budget, 1 when unknown
};

// A job's level and the figures behind it, as delivered to callbacks.
struct PressureReport {
  mlos_memory_pressure_level_t level = MLOS_MEMORY_PRESSURE_NORMAL;
  MemoryFigures figures;
  uint64_t detected_ns = 0;  // CLOCK_MONOTONIC when this level was entered
  uint64_t sequence = 0;     // level changes so far
};

class PressureLevelTracker {
 public:
  explicit PressureLevelTracker(MemoryThresholds t) : t_(t) {}

  // A kernel trigger fired at `now_ns`, meaning at least `level`.
  void kernel_event(mlos_memory_pressure_level_t level, uint64_t now_ns);
  // Folds in a sample; returns the level after it.
  mlos_memory_pressure_level_t update(const MemoryFigures& f, uint64_t now_ns);
  // update(), keeping a report: the figures of this sample, and when the
  // current level was entered and how many changes there were.
  const PressureReport& observe(const MemoryFigures& f, uint64_t now_ns);
  const PressureReport& report() const { return report_; }

  mlos_memory_pressure_level_t level() const { return level_; }
  const MemoryThresholds& thresholds() const { return t_; }
  void set_thresholds(const MemoryThresholds& t) { t_ = t; }

 private:
  // The level the figures call for; `exit` uses the exit thresholds.
  mlos_memory_pressure_level_t demanded(const MemoryFigures& f, uint64_t now_ns, bool exit) const;

  MemoryThresholds t_;
  mlos_memory_pressure_level_t level_ = MLOS_MEMORY_PRESSURE_NORMAL;
  std::optional<uint64_t> clear_since_ns_;  // figures below the exit threshold since
  PressureReport report_;
  uint64_t event_ns_[3] = {0, 0, 0};        // last kernel event per level
  bool event_seen_[3] = {false, false, false};
};

}  // namespace mlos
