// SPDX-License-Identifier: Apache-2.0
#include "core/memory_pressure.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace mlos {

namespace {

Error bad(const std::string& what) { return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory thresholds: " + what); }

bool parse_number(const char* text, double* out) {
  const char* end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, *out);
  return ec == std::errc() && p == end && p != text;
}

}  // namespace

Status validate(const MemoryThresholds& t) {
  if (!(t.critical_headroom > 0 && t.critical_headroom < t.moderate_headroom && t.moderate_headroom < 1)) {
    return bad("need 0 < critical headroom < moderate headroom < 1, got " + std::to_string(t.critical_headroom) +
               " and " + std::to_string(t.moderate_headroom));
  }
  if (!(t.hysteresis >= 0 && t.hysteresis <= 0.5) || t.moderate_headroom + t.hysteresis >= 1) {
    return bad("hysteresis must be in [0, 0.5] and keep moderate headroom + hysteresis below 1");
  }
  if (!(t.moderate_psi_some >= 0 && t.moderate_psi_some <= 100 && t.critical_psi_full >= 0 &&
        t.critical_psi_full <= 100)) {
    return bad("PSI thresholds must be percentages in [0, 100]");
  }
  if (t.hold_ms > 60000) return bad("hold_ms must be <= 60000");
  if (t.sample_ms < 10 || t.sample_ms > 10000) return bad("sample_ms must be in [10, 10000]");
  if (t.psi_trigger_window_ms < 500 || t.psi_trigger_window_ms > 10000) {
    return bad("psi_trigger_window_ms must be in [500, 10000]");
  }
  if (t.psi_trigger_stall_ms == 0 || t.psi_trigger_stall_ms >= t.psi_trigger_window_ms) {
    return bad("need 0 < psi_trigger_stall_ms < psi_trigger_window_ms");
  }
  return Status::Ok();
}

Result<MemoryThresholds> thresholds_from_env(const MemoryThresholds& base,
                                             const std::function<const char*(const char*)>& getenv) {
  MemoryThresholds t = base;
  struct Var {
    const char* name;
    double* fraction;  // percent in the variable, a fraction in the struct
    double* percent;
    uint32_t* ms;
  };
  const Var vars[] = {
      {"MLOS_MEMORY_MODERATE", &t.moderate_headroom, nullptr, nullptr},
      {"MLOS_MEMORY_CRITICAL", &t.critical_headroom, nullptr, nullptr},
      {"MLOS_MEMORY_PSI_SOME", nullptr, &t.moderate_psi_some, nullptr},
      {"MLOS_MEMORY_PSI_FULL", nullptr, &t.critical_psi_full, nullptr},
      {"MLOS_MEMORY_HOLD_MS", nullptr, nullptr, &t.hold_ms},
      {"MLOS_MEMORY_SAMPLE_MS", nullptr, nullptr, &t.sample_ms},
  };
  for (const Var& v : vars) {
    const char* text = getenv(v.name);
    if (!text) continue;
    double x = 0;
    if (!parse_number(text, &x) || x < 0 || (v.ms && (x > 1e6 || x != static_cast<uint32_t>(x)))) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(v.name) + "=\"" + text + "\" is not a valid number");
    }
    if (v.fraction) *v.fraction = x / 100.0;
    if (v.percent) *v.percent = x;
    if (v.ms) *v.ms = static_cast<uint32_t>(x);
  }
  if (Status s = validate(t); !s) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "from the MLOS_MEMORY_* environment: " + s.error().message);
  }
  return t;
}

const char* memory_source_name(MemorySource s) {
  switch (s) {
    case MemorySource::kJob: return "job";
    case MemorySource::kCgroup: return "cgroup";
    case MemorySource::kNode: return "node";
    case MemorySource::kNone: break;
  }
  return "none";
}

void MemoryFigures::consider(uint64_t available, uint64_t budget, MemorySource from) {
  if (budget == 0) return;
  available = std::min(available, budget);
  const double h = static_cast<double>(available) / static_cast<double>(budget);
  if (budget_bytes == 0 || h < headroom()) {
    available_bytes = available;
    budget_bytes = budget;
    source = from;
  }
}

double MemoryFigures::headroom() const {
  if (budget_bytes == 0) return 1.0;
  return static_cast<double>(std::min(available_bytes, budget_bytes)) / static_cast<double>(budget_bytes);
}

void PressureLevelTracker::kernel_event(mlos_memory_pressure_level_t level, uint64_t now_ns) {
  if (level <= MLOS_MEMORY_PRESSURE_NORMAL || level > MLOS_MEMORY_PRESSURE_CRITICAL) return;
  event_ns_[level] = now_ns;
  event_seen_[level] = true;
}

mlos_memory_pressure_level_t PressureLevelTracker::demanded(const MemoryFigures& f, uint64_t now_ns,
                                                            bool exit) const {
  const double h = f.headroom();
  const double margin = exit ? t_.hysteresis : 0.0;
  const double psi_scale = exit ? 0.5 : 1.0;
  const uint64_t hold_ns = uint64_t{t_.hold_ms} * 1000000;
  auto event_active = [&](int level) { return event_seen_[level] && now_ns - event_ns_[level] < hold_ns; };

  if (h <= t_.critical_headroom + margin ||
      (t_.critical_psi_full > 0 && f.psi_full_avg10 >= t_.critical_psi_full * psi_scale) ||
      event_active(MLOS_MEMORY_PRESSURE_CRITICAL)) {
    return MLOS_MEMORY_PRESSURE_CRITICAL;
  }
  if (h <= t_.moderate_headroom + margin ||
      (t_.moderate_psi_some > 0 && f.psi_some_avg10 >= t_.moderate_psi_some * psi_scale) ||
      event_active(MLOS_MEMORY_PRESSURE_MODERATE)) {
    return MLOS_MEMORY_PRESSURE_MODERATE;
  }
  return MLOS_MEMORY_PRESSURE_NORMAL;
}

mlos_memory_pressure_level_t PressureLevelTracker::update(const MemoryFigures& f, uint64_t now_ns) {
  const auto enter = demanded(f, now_ns, false);
  if (enter >= level_) {
    // Rising (or holding on the entry threshold): at once, and the exit
    // clock starts over.
    level_ = enter;
    clear_since_ns_.reset();
    return level_;
  }
  const auto stay = demanded(f, now_ns, true);
  if (stay >= level_) {
    clear_since_ns_.reset();
    return level_;
  }
  if (!clear_since_ns_) clear_since_ns_ = now_ns;
  if (now_ns - *clear_since_ns_ >= uint64_t{t_.hold_ms} * 1000000) {
    level_ = stay;
    clear_since_ns_.reset();
  }
  return level_;
}

const PressureReport& PressureLevelTracker::observe(const MemoryFigures& f, uint64_t now_ns) {
  const auto before = level_;
  if (update(f, now_ns) != before) {
    report_.level = level_;
    report_.detected_ns = now_ns;
    ++report_.sequence;
  }
  report_.figures = f;
  return report_;
}

}  // namespace mlos
