/* SPDX-License-Identifier: Apache-2.0 */
// What `mlos run` chose for a running job's process (docs/tuning.md), read
// from outside: the MLOS_TUNE_CHOICE its command was exec'd with, in
// /proc/<pid>/environ (the environment at exec, which is what mlos run
// set). For `mlos status`.
#pragma once

#include <sys/types.h>

#include <string>

namespace mlos::cli {

// The candidate's name; "" when the process was not started by a tuning
// `mlos run`, is gone, or its environment is not readable by this user.
std::string tuning_of_process(pid_t pid);

}  // namespace mlos::cli
