/* SPDX-License-Identifier: Apache-2.0 */
// Moving a process into a job's cgroup without trusting its pid: the pid is
// checked to still name the process that was recorded (pidfd + start
// time), that process's real and effective uid are checked against the
// requester's, and the process is checked to be alive after the write. Used
// for every move mlosd makes on a client's behalf.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/claim_ledger.h"
#include "core/status.h"
#include "os/cgroup/cgroup_driver.h"

namespace mlos::os {

// NO_SUCH_THREAD if `target` has exited or its pid now names another
// process; PERMISSION if `requester` (not root) does not own it by both real
// and effective uid; the driver's error if the write fails.
//
// Residual race, documented in docs/security.md: cgroupfs takes pids, not
// pidfds. If `target` exits and its pid is reused in the microseconds
// between the last check and the write, the write moves the successor; the
// check after the write detects that `target` is gone and the error says
// so, but the successor has been moved.
Status attach_checked(CgroupDriver& driver, const std::string& job, const ProcessId& target, uid_t requester);

}  // namespace mlos::os
