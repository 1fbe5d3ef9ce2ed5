/* SPDX-License-Identifier: Apache-2.0 */
// `mlos status`'s lines for what a job's policies published: auto's class
// and the features behind it, a recommended placement, the policies one
// policy attached for the job (engine/policy_report_file.h).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mlos::cli {

// Indented lines under the claims table; "" when there is nothing to say.
std::string policy_report_text(uint64_t job, const nlohmann::json& report);

}  // namespace mlos::cli
