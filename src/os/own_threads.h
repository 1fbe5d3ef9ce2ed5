/* SPDX-License-Identifier: Apache-2.0 */
// The threads of this process, as listed in /proc/self/task.
#pragma once

#include <sys/types.h>

#include <vector>

#include "core/status.h"

namespace mlos::os {

// Kernel thread ids of this process's threads now (a thread may exit right
// after). Errors: SYSTEM (/proc/self/task unreadable).
Result<std::vector<pid_t>> own_thread_ids();

}  // namespace mlos::os
