/* SPDX-License-Identifier: Apache-2.0 */
// CPU time, as the kernel counts it: per CPU (/proc/stat) and per process
// (/proc/<pid>/stat). What the thread-governor policy compares: how busy a
// job's CPUs are against how much of that is the job itself.
#pragma once

#include <sys/types.h>

#include <map>
#include <string_view>

#include "core/cpu_set.h"
#include "core/status.h"

namespace mlos::os {

// Busy seconds since boot of each CPU in `cpus` found in /proc/stat text
// (user + nice + system + irq + softirq + steal; idle and iowait are not
// busy). `ticks_per_second`: sysconf(_SC_CLK_TCK).
std::map<int, double> parse_cpu_busy_seconds(std::string_view proc_stat, const CpuSet& cpus, long ticks_per_second);

// The sum over `cpus` from /proc/stat now.
Result<double> cpu_busy_seconds(const CpuSet& cpus);

// CPU seconds (user + system, every thread) process `pid` has used.
Result<double> process_cpu_seconds(pid_t pid);

}  // namespace mlos::os
