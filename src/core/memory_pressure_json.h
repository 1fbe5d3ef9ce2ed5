/* SPDX-License-Identifier: Apache-2.0 */
// Memory thresholds and pressure reports as JSON: the form they take in
// mlosd's config ("memory_pressure"), on the control socket (watch_memory,
// memory_status) and in its registry. Thresholds use percentages, as the C
// API does.
#pragma once

#include <nlohmann/json.hpp>

#include "core/memory_pressure.h"
#include "core/status.h"

namespace mlos {

nlohmann::json thresholds_to_json(const MemoryThresholds& t);
// Keys of `j` over `base`: moderate_headroom_percent,
// critical_headroom_percent, moderate_psi_some, critical_psi_full,
// hysteresis_percent, hold_ms, sample_ms, psi_trigger_stall_ms,
// psi_trigger_window_ms. An unknown key, a wrong type or an invalid result
// is INVALID_ARGUMENT naming it.
Result<MemoryThresholds> thresholds_from_json(const nlohmann::json& j, const MemoryThresholds& base);

nlohmann::json report_to_json(const PressureReport& r);
// VERSION_MISMATCH if a field is missing or of the wrong type.
Result<PressureReport> report_from_json(const nlohmann::json& j);

}  // namespace mlos
