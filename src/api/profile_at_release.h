/* SPDX-License-Identifier: Apache-2.0 */
// MLOS_PROFILE: when set, each release_resources writes the handle's phase
// profile (core/profile_report.h) before the job ends: to stderr for "1" or
// "stderr", else appended to the file it names. `mlos run --profile` sets
// it. Best effort: a report that cannot be written is dropped, never an
// error of the release.
#pragma once

#include "engine/job.h"

namespace mlos::api {

void report_profile_if_asked(const Job& job, const void* handle);

}  // namespace mlos::api
