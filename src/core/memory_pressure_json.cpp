// SPDX-License-Identifier: Apache-2.0
#include "core/memory_pressure_json.h"

#include "core/json_fields.h"

namespace mlos {

using nlohmann::json;

json thresholds_to_json(const MemoryThresholds& t) {
  return json{{"moderate_headroom_percent", t.moderate_headroom * 100},
              {"critical_headroom_percent", t.critical_headroom * 100},
              {"moderate_psi_some", t.moderate_psi_some},
              {"critical_psi_full", t.critical_psi_full},
              {"hysteresis_percent", t.hysteresis * 100},
              {"hold_ms", t.hold_ms},
              {"sample_ms", t.sample_ms},
              {"psi_trigger_stall_ms", t.psi_trigger_stall_ms},
              {"psi_trigger_window_ms", t.psi_trigger_window_ms}};
}

Result<MemoryThresholds> thresholds_from_json(const json& j, const MemoryThresholds& base) {
  if (!j.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory thresholds must be a JSON object");
  MemoryThresholds t = base;
  for (const auto& [key, v] : j.items()) {
    auto number = [&](double* out, double scale) -> Status {
      if (!v.is_number()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory thresholds: " + key + " must be a number");
      *out = v.get<double>() * scale;
      return Status::Ok();
    };
    auto ms = [&](uint32_t* out) -> Status {
      if (!is_non_negative_integer(v) || v.get<uint64_t>() > UINT32_MAX) {
        return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory thresholds: " + key + " must be a non-negative integer");
      }
      *out = v.get<uint32_t>();
      return Status::Ok();
    };
    Status s;
    if (key == "moderate_headroom_percent") s = number(&t.moderate_headroom, 0.01);
    else if (key == "critical_headroom_percent") s = number(&t.critical_headroom, 0.01);
    else if (key == "moderate_psi_some") s = number(&t.moderate_psi_some, 1);
    else if (key == "critical_psi_full") s = number(&t.critical_psi_full, 1);
    else if (key == "hysteresis_percent") s = number(&t.hysteresis, 0.01);
    else if (key == "hold_ms") s = ms(&t.hold_ms);
    else if (key == "sample_ms") s = ms(&t.sample_ms);
    else if (key == "psi_trigger_stall_ms") s = ms(&t.psi_trigger_stall_ms);
    else if (key == "psi_trigger_window_ms") s = ms(&t.psi_trigger_window_ms);
    else s = make_error(MLOS_ERR_INVALID_ARGUMENT, "memory thresholds: unknown key '" + key + "'");
    if (!s) return s.error();
  }
  if (Status s = validate(t); !s) return s.error();
  return t;
}

json report_to_json(const PressureReport& r) {
  return json{{"level", static_cast<int>(r.level)},
              {"available_bytes", r.figures.available_bytes},
              {"budget_bytes", r.figures.budget_bytes},
              {"source", memory_source_name(r.figures.source)},
              {"psi_some_avg10", r.figures.psi_some_avg10},
              {"psi_full_avg10", r.figures.psi_full_avg10},
              {"detected_ns", r.detected_ns},
              {"sequence", r.sequence}};
}

Result<PressureReport> report_from_json(const json& j) {
  try {
    PressureReport r;
    const int level = j.at("level").get<int>();
    if (level < MLOS_MEMORY_PRESSURE_NORMAL || level > MLOS_MEMORY_PRESSURE_CRITICAL) {
      throw std::invalid_argument("level out of range");
    }
    r.level = static_cast<mlos_memory_pressure_level_t>(level);
    r.figures.available_bytes = non_negative_field(j, "available_bytes");
    r.figures.budget_bytes = non_negative_field(j, "budget_bytes");
    const std::string source = j.at("source").get<std::string>();
    for (auto s : {MemorySource::kNone, MemorySource::kJob, MemorySource::kCgroup, MemorySource::kNode}) {
      if (source == memory_source_name(s)) r.figures.source = s;
    }
    r.figures.psi_some_avg10 = j.at("psi_some_avg10").get<double>();
    r.figures.psi_full_avg10 = j.at("psi_full_avg10").get<double>();
    r.detected_ns = non_negative_field(j, "detected_ns");
    r.sequence = non_negative_field(j, "sequence");
    return r;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_VERSION_MISMATCH, std::string("mlosd's memory report is not understood: ") + e.what());
  }
}

}  // namespace mlos
