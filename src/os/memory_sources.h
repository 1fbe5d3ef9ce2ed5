/* SPDX-License-Identifier: Apache-2.0 */
// Where memory-pressure figures come from on Linux: the memory cgroup a
// process is in (v1 or v2), /proc/meminfo, PSI averages, and the kernel's
// two ways of waking a watcher (PSI triggers; v1 cgroup.event_control
// eventfds for usage thresholds and vmpressure levels).
//
// Readers take their roots as parameters so tests can use fixture trees.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_pressure.h"
#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::os {

// A memory cgroup directory (absolute path) and its hierarchy version.
struct MemoryCgroup {
  int version = 0;  // 1 or 2
  std::string dir;
};

// The limited memory cgroup nearest to `pid` (its own or an ancestor with a
// limit), or nullopt when no cgroup above it has a memory limit. v1's memory
// controller when mounted, else v2 when the unified hierarchy has memory.
Result<std::optional<MemoryCgroup>> limited_memory_cgroup(pid_t pid, const std::string& proc_root = "/proc");

// What a memory cgroup holds. `working_set` = usage - inactive file pages
// (what cannot be dropped without I/O, as the kubelet counts it).
struct CgroupMemory {
  uint64_t usage = 0;
  uint64_t limit = UINT64_MAX;  // UINT64_MAX: none
  uint64_t working_set = 0;
};
Result<CgroupMemory> read_cgroup_memory(const MemoryCgroup& cg);

// Averages of a PSI file ("some avg10=1.23 ..." / "full avg10=...").
struct PsiAverages {
  double some_avg10 = 0;
  double full_avg10 = 0;
};
std::optional<PsiAverages> parse_pressure_averages(std::string_view text);
// /proc/pressure/memory, or the v2 cgroup's memory.pressure when `cg` is v2.
std::optional<PsiAverages> read_memory_pressure(const std::optional<MemoryCgroup>& cg,
                                                const std::string& proc_root = "/proc");

struct NodeMemory {
  uint64_t available = 0;  // MemAvailable
  uint64_t total = 0;      // MemTotal
};
Result<NodeMemory> read_node_memory(const std::string& proc_root = "/proc");

// Adds to `f` the node (MemAvailable of MemTotal) and the PSI averages (of
// `cg` when it is a v2 cgroup, else of the node). Unreadable files are
// skipped.
void add_node_figures(MemoryFigures* f, const std::optional<MemoryCgroup>& cg, const std::string& proc_root = "/proc");

// Anonymous + shmem resident bytes of `pid` (RssAnon + RssShmem): what the
// job itself holds that only freeing can give back.
Result<uint64_t> process_resident_bytes(pid_t pid, const std::string& proc_root = "/proc");

// A PSI trigger on `path` (/proc/pressure/memory or a v2 memory.pressure):
// the fd becomes readable for poll (POLLPRI) when tasks stalled `stall_us`
// within `window_us`. If the kernel refuses the window as an unprivileged
// caller's (EINVAL without CAP_SYS_RESOURCE unless a multiple of 2 s), the
// window and stall are scaled up to the next multiple of 2 s and retried;
// *note then says so. UNSUPPORTED when the kernel has no PSI.
struct PsiTrigger {
  UniqueFd fd;
  uint64_t stall_us = 0;
  uint64_t window_us = 0;
};
Result<PsiTrigger> open_psi_trigger(const std::string& path, const std::string& kind, uint64_t stall_us,
                                    uint64_t window_us, std::string* note);

// INVALID_ARGUMENT unless `fd` is an eventfd; makes it non-blocking (for
// every holder: the flag belongs to the open file), so that ringing it as a
// doorbell never blocks.
Status check_eventfd(int fd);

// v1 memory cgroup notifications through cgroup.event_control: an eventfd
// that counts each time usage crosses `bytes` (either way), or each
// vmpressure event at `level` ("low", "medium", "critical") in the cgroup.
// UNSUPPORTED for a v2 cgroup.
Result<UniqueFd> v1_usage_threshold_event(const MemoryCgroup& cg, uint64_t bytes);
Result<UniqueFd> v1_pressure_level_event(const MemoryCgroup& cg, const std::string& level);

}  // namespace mlos::os
