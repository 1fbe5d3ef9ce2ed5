// SPDX-License-Identifier: Apache-2.0
#include "top_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

#include "daemon_view.h"

namespace mlos::cli {

using nlohmann::json;

const std::array<PhaseInfo, 6> kTopPhases = {{{"IDLE", 'I', "idle"},
                                              {"DATA_LOADING", 'D', "data"},
                                              {"FORWARD", 'F', "forward"},
                                              {"BACKWARD", 'B', "backward"},
                                              {"OPTIMIZER", 'O', "optimizer"},
                                              {"CHECKPOINT", 'C', "checkpoint"}}};

std::map<int, double> CpuBusyTracker::update(const std::map<int, double>& busy_seconds, double now_s) {
  std::map<int, double> busy;
  const double elapsed = previous_s_ >= 0 ? now_s - previous_s_ : 0;
  for (const auto& [cpu, seconds] : busy_seconds) {
    auto prev = previous_.find(cpu);
    if (elapsed <= 0 || prev == previous_.end() || seconds < prev->second) continue;
    busy[cpu] = std::clamp(100.0 * (seconds - prev->second) / elapsed, 0.0, 100.0);
  }
  previous_ = busy_seconds;
  previous_s_ = now_s;
  return busy;
}

const char* sort_column_title(SortColumn column) {
  switch (column) {
    case SortColumn::kCpuPercent: return "CPU%";
    case SortColumn::kMemory: return "MEM";
    case SortColumn::kJob: return "JOB";
    case SortColumn::kLabel: return "LABEL";
    case SortColumn::kPhase: return "PHASE";
    case SortColumn::kPressure: return "PRESSURE";
  }
  return "?";
}

std::string pressure_name(int level) {
  switch (level) {
    case 0: return "normal";
    case 1: return "moderate";
    case 2: return "critical";
    default: return "-";
  }
}

std::string phase_bar(const std::optional<std::array<double, 6>>& shares, int width) {
  if (width <= 0) return "";
  if (!shares) return std::string(static_cast<size_t>(width), '.');
  // Largest remainder: each phase gets floor(share * width) cells, the
  // cells left over go to the largest fractions, so the bar is exactly
  // `width` long and a phase with a visible share is never rounded away
  // by another's rounding up.
  std::array<int, 6> cells{};
  std::array<std::pair<double, size_t>, 6> remainders{};
  int used = 0;
  for (size_t i = 0; i < 6; ++i) {
    const double exact = std::max(0.0, (*shares)[i]) * width;
    cells[i] = static_cast<int>(std::floor(exact));
    used += cells[i];
    remainders[i] = {exact - cells[i], i};
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; used < width && k < 6; ++k, ++used) ++cells[remainders[k].second];
  std::string bar;
  for (size_t i = 0; i < 6; ++i) bar.append(static_cast<size_t>(cells[i]), kTopPhases[i].letter);
  bar.resize(static_cast<size_t>(width), '.');
  return bar;
}

std::string meter_bar(std::optional<double> busy, int width) {
  if (width <= 0) return "";
  int filled = busy ? static_cast<int>(std::lround(std::clamp(*busy, 0.0, 100.0) / 100.0 * width)) : 0;
  return std::string(static_cast<size_t>(filled), '|') + std::string(static_cast<size_t>(width - filled), ' ');
}

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TopJobRow row_of(const json& job) {
  TopJobRow r;
  r.job = job.contains("job") && job["job"].is_number_unsigned() ? job["job"].get<uint64_t>() : 0;
  r.label = json_text(job, "label");
  r.pid = json_text(job, "pid");
  r.cpus_text = json_text(job, "cpus");
  if (auto set = CpuSet::parse_list(r.cpus_text == "-" ? "" : r.cpus_text)) r.cpus = *set;
  r.phase = json_text(job, "phase");
  const json& seconds = job.contains("phase_seconds") ? job["phase_seconds"] : json::object();
  std::array<double, 6> s{};
  double total = 0;
  for (size_t i = 0; i < kTopPhases.size(); ++i) {
    s[i] = std::max(0.0, json_number(seconds, kTopPhases[i].key).value_or(0));
    total += s[i];
  }
  if (total > 0) {
    for (auto& x : s) x /= total;
    r.phase_share = s;
  }
  if (auto used = json_number(job, "memory_used_bytes"); used && *used >= 0) {
    r.memory_used = static_cast<uint64_t>(*used);
  }
  r.memory_limit = static_cast<uint64_t>(std::max(0.0, json_number(job, "memory_bytes").value_or(0)));
  if (job.contains("memory_pressure")) {
    r.pressure = static_cast<int>(json_number(job["memory_pressure"], "level").value_or(-1));
  }
  r.exclusive = job.contains("exclusive") && job["exclusive"].is_boolean() && job["exclusive"].get<bool>();
  r.gpus = short_gpus(job);
  r.gpu_use = gpu_use(job);
  return r;
}

}  // namespace

void TopModel::update(const json& reply, const std::map<uint64_t, double>& cpu_percent,
                      const std::map<int, double>& cpu_busy) {
  reply_ = reply.is_object() ? reply : json::object();
  unavailable_.clear();
  jobs_.clear();
  const json& jobs = reply_.contains("jobs") && reply_["jobs"].is_array() ? reply_["jobs"] : json::array();
  for (const auto& job : jobs) {
    if (!job.is_object()) continue;
    TopJobRow r = row_of(job);
    if (auto it = cpu_percent.find(r.job); it != cpu_percent.end()) r.cpu_percent = it->second;
    jobs_.push_back(std::move(r));
  }
  std::stable_sort(jobs_.begin(), jobs_.end(), [](const auto& a, const auto& b) { return a.job < b.job; });
  for (size_t i = 0; i < jobs_.size(); ++i) {
    jobs_[i].mark = static_cast<char>('A' + i % 26);
    jobs_[i].colour = static_cast<int>(i % kJobColours);
  }
  cpu_busy_ = cpu_busy;
  auto list = [&](const char* key) {
    const std::string text = json_text(reply_, key, "");
    auto set = CpuSet::parse_list(text);
    return set ? *set : CpuSet{};
  };
  cpus_ = list("cpus");
  exclusive_ = list("exclusive_cpus");
}

void TopModel::set_unavailable(const std::string& why) {
  unavailable_ = why.empty() ? "mlosd unavailable" : why;
  jobs_.clear();
  cpu_busy_.clear();
}

void TopModel::cycle_sort(int step) {
  const int next = ((static_cast<int>(sort_) + step) % kSortColumns + kSortColumns) % kSortColumns;
  sort_ = static_cast<SortColumn>(next);
}

std::vector<TopJobRow> TopModel::rows() const {
  std::vector<TopJobRow> out;
  const std::string needle = lower(filter_);
  for (const auto& r : jobs_) {
    if (needle.empty() || lower(r.label).find(needle) != std::string::npos) out.push_back(r);
  }
  // Known values before unknown ones; then the column's order; then job id.
  auto by_number = [](const auto& a, const auto& b) {
    // true when a goes first: present before absent, larger first.
    if (a.has_value() != b.has_value()) return std::optional<bool>(a.has_value());
    if (!a || *a == *b) return std::optional<bool>();
    return std::optional<bool>(*a > *b);
  };
  auto text = [](const std::string& s) { return std::make_tuple(s == "-", lower(s)); };
  std::stable_sort(out.begin(), out.end(), [&](const TopJobRow& a, const TopJobRow& b) {
    std::optional<bool> first;
    switch (sort_) {
      case SortColumn::kCpuPercent: first = by_number(a.cpu_percent, b.cpu_percent); break;
      case SortColumn::kMemory: first = by_number(a.memory_used, b.memory_used); break;
      case SortColumn::kPressure:
        first = by_number(a.pressure >= 0 ? std::optional<int>(a.pressure) : std::nullopt,
                          b.pressure >= 0 ? std::optional<int>(b.pressure) : std::nullopt);
        break;
      case SortColumn::kLabel:
        if (text(a.label) != text(b.label)) first = text(a.label) < text(b.label);
        break;
      case SortColumn::kPhase:
        if (text(a.phase) != text(b.phase)) first = text(a.phase) < text(b.phase);
        break;
      case SortColumn::kJob: break;
    }
    return first ? *first : a.job < b.job;
  });
  return out;
}

std::vector<CpuMeter> TopModel::meters() const {
  std::vector<CpuMeter> out;
  if (!unavailable_.empty()) return out;
  const auto shown = rows();
  for (int cpu : cpus_.to_vector()) {
    CpuMeter m;
    m.cpu = cpu;
    if (auto it = cpu_busy_.find(cpu); it != cpu_busy_.end()) m.busy = it->second;
    m.exclusive = exclusive_.test(cpu);
    int holders = 0;
    for (const auto& r : shown) {
      if (!r.cpus.test(cpu)) continue;
      if (++holders == 1) {
        m.mark = r.mark;
        m.colour = r.colour;
      }
    }
    if (holders > 1) {
      m.mark = '+';
      m.colour = -1;
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace mlos::cli
