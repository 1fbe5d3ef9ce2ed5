/* SPDX-License-Identifier: Apache-2.0 */
// Starting the helper programs libmlos and mlosd run (mlos-policyhost,
// mlos-dataload) the same way: posix_spawn with an empty environment, no
// signal blocked and every disposition at its default (a daemon may block
// signals for its signalfd), and chosen descriptors at chosen numbers
// (everything else is close-on-exec in the caller).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace mlos::os {

struct SpawnedFd {
  int from;  // in the caller; must not be one of the `to` numbers
  int to;    // in the child
};

// NOT_FOUND when `program` does not exist, SYSTEM otherwise; the message
// names what could not be started.
Result<pid_t> spawn_process(const std::string& program, const std::vector<std::string>& args,
                            const std::vector<SpawnedFd>& fds, const std::string& what);

// How a child ended, from its wait status: "exited with 3", "killed by SIGSEGV".
std::string describe_wait_status(int status);

}  // namespace mlos::os
