/* SPDX-License-Identifier: Apache-2.0 */
// `mlos policy` output: mlosd's "policies" reply and a policy's
// self-description as text. Pure functions, tolerant of missing or null
// fields ("-"), like daemon_view.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mlos::cli {

// For the embedded catalog ("source": "embedded"), a first line naming the
// policy host a job would start (or why it cannot). Then
// "policy directory DIR; defaults: a, b" (or why mlosd has no policies),
// then a table NAME STATE JOBS FAILURES RESTARTS DEFAULT PATH over every
// policy that is available or loaded (STATE "-" when not loaded), a
// "NAME failed: why" line per failed one, and a "skipped PATH: why" line
// per file left out. Every line ends in '\n'.
std::string policies_text(const nlohmann::json& reply);

// "NAME (PATH)", the description, the tick interval and the config schema.
std::string policy_info_text(const nlohmann::json& info, const std::string& path);

// The policies a job uses, comma-separated, a failed one marked with a
// trailing '!' (from the job's "advice"."failed_policies"); "-" for none.
std::string job_policies(const nlohmann::json& job);

}  // namespace mlos::cli
