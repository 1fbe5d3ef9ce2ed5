/* SPDX-License-Identifier: Apache-2.0 */
// What confinement needs to know of a process before moving it: whether it
// is a kernel thread (never moved), where its own affinity lets it run,
// whose it is (root's own pinning is respected, nobody else's), and its
// name (for reports).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "core/cpu_set.h"

namespace mlos::os {

struct ProcessFacts {
  bool kernel_thread = false;  // PF_KTHREAD in /proc/<pid>/stat's flags
  CpuSet affinity;             // its main thread's (sched_getaffinity)
  std::string comm;
  uid_t uid = 0;               // its real uid (/proc/<pid>/status "Uid:")
};

// nullopt when the process is gone (or cannot be read).
std::optional<ProcessFacts> read_process_facts(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace mlos::os
