/* SPDX-License-Identifier: Apache-2.0 */
// One cgroup per job, through whichever hierarchy the machine has: v1
// (controllers mounted separately) or v2 (unified). The daemon decides the
// limits; a driver turns them into cgroupfs writes.
//
// Jobs live under a base cgroup ("mlos" by default) that the driver creates
// on first use. Job names are validated ([A-Za-z0-9_.-], 1..64 chars, not
// "." or "..") so they cannot escape the base.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cpu_set.h"
#include "core/status.h"
#include "os/cgroup/cgroup_fs.h"
#include "os/unique_fd.h"

namespace mlos::os {

// NVIDIA GPUs' device files, /dev/nvidiaN: character devices 195:N.
constexpr int kNvidiaGpuMajor = 195;

// Which GPUs' device files a job's processes may open (docs/gpu.md,
// "Keeping other processes off a GPU"): `allowed` (its own) and `denied`
// (every other GPU of the node), by minor number. The control devices
// (/dev/nvidiactl, nvidia-uvm) stay open: CUDA needs them for any GPU.
struct GpuDeviceRule {
  std::vector<int> allowed;
  std::vector<int> denied;
};

struct CgroupLimits {
  CpuSet cpus;              // cpuset.cpus (required, non-empty)
  CpuSet mems;              // cpuset.mems (required, non-empty)
  uint32_t cpu_weight = 100;  // v2 cpu.weight scale, 1..10000 (v1: shares = weight * 1024 / 100)
  std::optional<uint64_t> memory_max;   // hard limit
  std::optional<uint64_t> memory_high;  // throttling point (v1: soft limit)
  std::optional<uint64_t> memory_low;   // protection (v2 only)
  std::optional<GpuDeviceRule> gpu_devices;  // v1 devices controller; v2: unsupported (a BPF program)
};

struct CgroupUsage {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> cpu_usage_ns;
  // Time the cgroup's tasks stalled on memory (PSI "some", v2
  // memory.pressure); v1 has no per-cgroup PSI, so always empty there.
  std::optional<uint64_t> memory_stall_us;
  // memory_bytes less inactive file pages (what reclaim cannot take back
  // without I/O): the figure memory-pressure levels are computed from.
  std::optional<uint64_t> memory_working_set;
  // avg10 of the cgroup's memory.pressure, percent (v2 only).
  std::optional<double> memory_psi_some_avg10;
  std::optional<double> memory_psi_full_avg10;
};

class CgroupDriver {
 public:
  virtual ~CgroupDriver() = default;
  virtual std::string version() const = 0;  // "v1" or "v2"
  // Creates the job's cgroup (and the base, with controllers enabled as the
  // hierarchy requires). Idempotent.
  virtual Status create(const std::string& job) = 0;
  // Writes every limit; a limit the hierarchy cannot express is reported in
  // `unsupported` (one line each) rather than failing the whole call.
  virtual Status apply(const std::string& job, const CgroupLimits& limits, std::vector<std::string>* unsupported) = 0;
  // Rewrites only the CPU weight (1..10000; v1: cpu.shares): the daemon's
  // hot path when phases change, one cgroupfs write.
  virtual Status set_cpu_weight(const std::string& job, uint32_t weight) = 0;
  // Moves process `pid` (all its threads) into the job's cgroup.
  virtual Status attach(const std::string& job, pid_t pid) = 0;
  // Moves every process out of the job's cgroup: back to `origin`, the
  // cgroup its owner came from as /proc/<pid>/cgroup names it (v1: the
  // cpuset hierarchy's path, used in each hierarchy that has it), so a job
  // started under systemd, Slurm or Kubernetes ends where it began; else
  // (origin "", gone, or refusing processes) to where unmanaged processes
  // belong: the hierarchy's root (v1), or the leaf "<base>/released" (v2,
  // whose base may not hold processes).
  virtual Status detach(const std::string& job, const std::string& origin) = 0;
  virtual Result<std::vector<pid_t>> processes(const std::string& job) const = 0;
  virtual Result<CgroupUsage> usage(const std::string& job) const = 0;
  // An eventfd that the kernel signals each time the job's memory usage
  // crosses `bytes` (v1 cgroup.event_control). UNSUPPORTED where the
  // hierarchy has no such notification (v2, fakes): callers then sample.
  virtual Result<UniqueFd> memory_threshold_event(const std::string& job, uint64_t bytes);
  // A PSI trigger on the job's memory.pressure (v2; see
  // os::open_psi_trigger for the window rules and `note`). UNSUPPORTED
  // where the hierarchy has no per-cgroup PSI (v1, fakes).
  virtual Result<UniqueFd> memory_pressure_trigger(const std::string& job, const std::string& kind,
                                                   uint64_t stall_us, uint64_t window_us, std::string* note);
  // Removes the job's cgroup; fails (EBUSY) while processes remain in it.
  virtual Status remove(const std::string& job) = 0;
  // Names of the job cgroups under the base (to reconcile after a restart).
  virtual Result<std::vector<std::string>> jobs() const = 0;
};

// INVALID_ARGUMENT unless `job` is a safe cgroup name (see above).
Status validate_job_name(const std::string& job);

// v1: one CgroupFs per controller (cpuset, cpu, memory; cpuacct optional).
struct CgroupV1Mounts {
  std::shared_ptr<CgroupFs> cpuset, cpu, memory, cpuacct;  // cpuacct may be null
  std::shared_ptr<CgroupFs> devices;                       // may be null: no GPU device rules then
};
std::unique_ptr<CgroupDriver> make_cgroup_v1_driver(CgroupV1Mounts mounts, std::string base = "mlos");
// v2: the unified hierarchy's root (or the delegated subtree mlosd owns).
std::unique_ptr<CgroupDriver> make_cgroup_v2_driver(std::shared_ptr<CgroupFs> root, std::string base = "mlos");

// Where the hierarchies are, from /proc/self/mountinfo text.
struct CgroupMounts {
  std::string unified;                 // cgroup2 mount point, "" if none
  std::string cpuset, cpu, memory, cpuacct, devices;  // v1 mount points, "" if absent
};
CgroupMounts parse_cgroup_mounts(const std::string& mountinfo);

// The driver for this machine: v2 when the unified hierarchy has the cpuset,
// cpu and memory controllers, else v1 when all three are mounted, else
// UNSUPPORTED saying what is missing.
Result<std::unique_ptr<CgroupDriver>> detect_cgroup_driver(const std::string& mountinfo_path = "/proc/self/mountinfo",
                                                           std::string base = "mlos");

}  // namespace mlos::os
