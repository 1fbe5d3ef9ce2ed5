/* SPDX-License-Identifier: Apache-2.0 */
// `mlos top`'s interactive view, without the terminal: what the screen
// shows (per-CPU meters with the jobs on each CPU, job rows) and the user's
// choices (sort column, filter). Pure: fed with mlosd's status reply and
// /proc/stat text, so it is tested without a terminal or a daemon
// (tests/cli/top_model_test.cpp). top_screen.h draws it with ncurses.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu_set.h"

namespace mlos::cli {

// Busy share of each CPU between consecutive samples of its busy seconds
// (os::parse_cpu_busy_seconds over /proc/stat) over the time between them.
class CpuBusyTracker {
 public:
  // `busy_seconds`: CPU -> busy seconds since boot, taken at `now_s`
  // (monotonic seconds). Returns CPU -> busy percent, clamped to 0..100,
  // for the CPUs in this and the previous sample; the first call returns
  // nothing.
  std::map<int, double> update(const std::map<int, double>& busy_seconds, double now_s);

 private:
  std::map<int, double> previous_;
  double previous_s_ = -1;
};

// Columns the job list can be sorted by, in the order `s` cycles them.
enum class SortColumn { kCpuPercent, kMemory, kJob, kLabel, kPhase, kPressure };
constexpr int kSortColumns = 6;
const char* sort_column_title(SortColumn column);

// The training phases in mlosd's phase_seconds, in training order: key,
// the letter drawn in phase bars, and a short name for the legend.
struct PhaseInfo {
  const char* key;
  char letter;
  const char* name;
};
extern const std::array<PhaseInfo, 6> kTopPhases;

struct TopJobRow {
  uint64_t job = 0;
  std::string label;
  std::string pid;             // as text ("-" when unknown)
  CpuSet cpus;
  std::string cpus_text;       // mlosd's list, "-" when unknown
  std::string phase;           // current phase ("-" when unknown)
  std::optional<std::array<double, 6>> phase_share;  // fractions in kTopPhases order, sum 1
  std::optional<double> cpu_percent;  // 100 = one CPU; none before a second sample
  std::optional<uint64_t> memory_used;
  uint64_t memory_limit = 0;   // 0: none requested
  int pressure = -1;           // MLOS_MEMORY_PRESSURE_* (0 normal, 1 moderate, 2 critical); -1 unknown
  bool exclusive = false;
  std::string gpus;            // short_gpus() of the GPUs it holds, "-" for none
  std::string gpu_use;         // gpu_use(): utilization and GPU memory, "-" unknown
  char mark = '?';             // the job's letter on CPU meters: 'A'.. by job id, stable under filtering
  int colour = 0;              // 0..kJobColours-1, from the same position
};
constexpr int kJobColours = 6;

// One meter per CPU mlosd manages.
struct CpuMeter {
  int cpu = 0;
  std::optional<double> busy;  // percent, none before a second sample
  char mark = ' ';             // the letter of the one shown job on it, '+' for several, ' ' none
  int colour = -1;             // that job's colour, -1 for none or several
  bool exclusive = false;      // held exclusively by a job (mlosd's exclusive_cpus)
};

// "normal", "moderate", "critical", "-".
std::string pressure_name(int level);

// `width` letters, each phase's share of them (kTopPhases' letters; the
// largest remainders get the rounding), '.' for an empty bar (no phase
// time yet). Always exactly `width` characters.
std::string phase_bar(const std::optional<std::array<double, 6>>& shares, int width);

// The meter body: '|' for the busy share of `width` cells, spaces after.
std::string meter_bar(std::optional<double> busy, int width);

class TopModel {
 public:
  // Takes a new status reply (as DaemonStatusSource::fetch returns it),
  // the jobs' CPU% (CpuRateTracker) and the CPUs' busy % (CpuBusyTracker).
  void update(const nlohmann::json& reply, const std::map<uint64_t, double>& cpu_percent,
              const std::map<int, double>& cpu_busy);
  // mlosd stopped answering: jobs and meters are cleared (they would be
  // stale) and `why` is kept for the screen; the next update() clears it.
  void set_unavailable(const std::string& why);
  const std::string& unavailable() const { return unavailable_; }

  // `s`/`>`: next column, `<`: previous.
  void cycle_sort(int step);
  SortColumn sort() const { return sort_; }
  // Rows whose label contains `filter` (case-insensitive); "" = all.
  void set_filter(std::string filter) { filter_ = std::move(filter); }
  const std::string& filter() const { return filter_; }

  // The jobs that pass the filter, sorted: numbers (CPU%, memory,
  // pressure) descending, text (label, phase) and job id ascending; ties
  // and unknown values ("-", placed last) by job id.
  std::vector<TopJobRow> rows() const;
  // One meter per CPU in the reply's "cpus", ascending; marks come from the
  // rows that pass the filter.
  std::vector<CpuMeter> meters() const;
  // The reply's header figures.
  const nlohmann::json& reply() const { return reply_; }
  size_t total_jobs() const { return jobs_.size(); }

 private:
  nlohmann::json reply_ = nlohmann::json::object();
  std::vector<TopJobRow> jobs_;  // job id order
  std::map<int, double> cpu_busy_;
  CpuSet cpus_;
  CpuSet exclusive_;
  std::string unavailable_;
  SortColumn sort_ = SortColumn::kCpuPercent;
  std::string filter_;
};

}  // namespace mlos::cli
