/* SPDX-License-Identifier: Apache-2.0 */
// One job as mlosd holds it while it runs: its durable record and what is
// only in memory (its phase page, the phase last seen, the cgroup settings
// applied, notes, the memory watch, what its policies set). JobManager owns
// them by id; its parts (JobCgroups, job status) read and update them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/phase_profile.h"
#include "daemon/job_memory_watch.h"
#include "daemon/job_registry.h"
#include "mlos/training.h"
#include "os/shared_page.h"
#include "policy/policy_grant.h"

namespace mlos::daemon {

struct LiveJob {
  JobRecord record;
  std::optional<os::SharedPage> page;  // the job's phase page, read-only
  PhaseProfile explicit_profile;       // phases sent over the socket
  bool marked = false;                 // any phase seen yet
  mlos_training_phase_t phase = MLOS_TRAINING_PHASE_IDLE;
  uint32_t weight = 0;                 // applied cpu weight, 0 = none yet (no cgroup of its own)
  bool protected_memory = false;       // memory.low applied
  std::vector<std::string> notes;      // degraded effects, one line each
  std::unique_ptr<JobMemoryWatch> memory;  // set by watch_memory
  policy::PolicyGrant policy;          // what its policies set and asked for
  int pressure_level_seen = -1;        // last level told to its policies

  // Adds `line` to the notes unless it is there already.
  void note_once(const std::string& line) {
    if (std::find(notes.begin(), notes.end(), line) == notes.end()) notes.push_back(line);
  }
};

}  // namespace mlos::daemon
