/* SPDX-License-Identifier: Apache-2.0 */
// Facts about processes and memory read from /proc and cgroupfs. The parsers
// are pure functions of file text (tested on fixtures); the readers take the
// filesystem roots as parameters so tests can point them at fixture trees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/claim_ledger.h"
#include "core/cpu_set.h"
#include "core/placement.h"
#include "core/status.h"
#include "core/topology.h"

namespace mlos::os {

struct ProcStat {
  int pid = 0;
  char state = '?';
  int ppid = 0;
  int nice = 0;
  uint64_t start_time = 0;  // clock ticks since boot
  uint64_t utime = 0;       // clock ticks in user mode (all threads)
  uint64_t stime = 0;       // clock ticks in kernel mode
};

// Parses /proc/<pid>/stat (or task/<tid>/stat). The command name may contain
// spaces and parentheses; parsing starts after the last ')'.
Result<ProcStat> parse_proc_stat(std::string_view text);
// Value in bytes of a "Key:   123 kB" line of /proc/meminfo or node meminfo
// ("Node 0 MemFree: ..."); nullopt if absent.
std::optional<uint64_t> parse_meminfo_field(std::string_view text, std::string_view key);
// The cgroup path of `controller` in /proc/<pid>/cgroup text ("memory" for
// v1, "" for the v2 unified line "0::/path").
std::optional<std::string> parse_cgroup_path(std::string_view text, std::string_view controller);

// The cumulative stall times in a PSI file (/proc/pressure/memory, a v2
// cgroup's memory.pressure): the "total=" microseconds of the "some" and
// "full" lines (full is 0 where the file has none). nullopt if there is no
// "some" line.
struct PressureTotals {
  uint64_t some_us = 0;
  uint64_t full_us = 0;
};
std::optional<PressureTotals> parse_pressure_totals(std::string_view text);

Result<ProcStat> read_proc_stat(int pid, const std::string& proc_root = "/proc");

// The process identity of `pid` (pid + start time); NO_SUCH_THREAD if gone,
// SYSTEM (with errno) if /proc could not be read (e.g. EMFILE).
Result<ProcessId> process_id(int pid, const std::string& proc_root = "/proc");

// What /proc says about a recorded owner. kGone only on proof: the pid does
// not exist (ENOENT/ESRCH), belongs to a process with another start time
// (reused), or is a zombie. Any other failure (EMFILE, ENFILE, ENOMEM,
// EACCES, an unparsable line) is kUnknown: the caller keeps what the owner
// holds, because dropping a live job's CPUs is worse than keeping a dead
// one's until the next check.
enum class Liveness { kAlive, kGone, kUnknown };
Liveness liveness(const ProcessId& id, const std::string& proc_root = "/proc");
// liveness(id) != kGone: "not known to be gone". What claims and jobs are
// kept by.
bool is_alive(const ProcessId& id, const std::string& proc_root = "/proc");
// The uid owning process `pid` (of /proc/<pid>: its effective uid).
Result<uint32_t> process_uid(int pid, const std::string& proc_root = "/proc");
// The real and effective uid of `pid` (the "Uid:" line of its status file).
struct ProcessUids {
  uint32_t real = 0;
  uint32_t effective = 0;
};
Result<ProcessUids> process_uids(int pid, const std::string& proc_root = "/proc");
// Parses the "Uid:" line of /proc/<pid>/status text.
Result<ProcessUids> parse_status_uids(std::string_view status_text);
// `pid` followed by its ancestors up to (excluding) pid 0.
std::vector<ProcessId> lineage(int pid, const std::string& proc_root = "/proc");

// The file mapped at `address` in /proc/<pid>/maps text: the path the
// kernel shows for the mapping that holds it (absolute, symlinks resolved;
// "\012" for a newline in a name, as the kernel escapes it). nullopt if no
// mapping holds it, or it maps no file ([heap], anonymous, " (deleted)").
std::optional<std::string> parse_maps_file_at(std::string_view maps_text, uintptr_t address);

// The kernel's boot id (/proc/sys/kernel/random/boot_id), "" if unreadable.
std::string current_boot_id(const std::string& proc_root = "/proc");

// Memory the calling process can still get: min(MemAvailable, headroom of
// every memory cgroup above it, v1 or v2), plus per-node free memory.
MemoryAvailability read_memory_availability(const Topology& topology, const std::string& proc_root = "/proc",
                                            const std::string& sys_root = "/sys");

}  // namespace mlos::os
