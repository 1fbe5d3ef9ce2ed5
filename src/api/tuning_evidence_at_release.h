/* SPDX-License-Identifier: Apache-2.0 */
// MLOS_TUNE_EVIDENCE: set by `mlos run` (docs/tuning.md) to the file of
// the start-up settings the run was given. At each release_resources of a
// job that took optimizer steps, one line goes there:
//   {"steps": <OPTIMIZER entries>, "step_ms": <ms per step>}
// where the time is the job's DATA_LOADING, FORWARD, BACKWARD and
// OPTIMIZER time (idle and checkpoint time excluded) over its steps. The
// next `mlos run` of the same command compares candidates by it. Best
// effort: never an error of the release.
#pragma once

#include "engine/job.h"

namespace mlos::api {

void record_step_time_if_asked(const Job& job);

}  // namespace mlos::api
