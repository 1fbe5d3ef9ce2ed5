/* SPDX-License-Identifier: Apache-2.0 */
// What NVML's readings show of each job (docs/gpu.md, "Per-job GPU
// figures"): the device memory of its processes, the utilization of the GPUs
// it holds, and how long it waited for data with those GPUs idle (the data
// stall: in DATA_LOADING while its GPUs' utilization is below
// kIdlePercent). Pure accounting over readings given to it, kept across
// them for the totals; mlosd feeds it on its metrics thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "daemon/job_metrics.h"
#include "gpu/gpu_inventory.h"
#include "gpushare/share_file.h"

namespace mlos::daemon {

struct JobGpuFigures {
  // NVML's used memory of the job's processes (its owner and every process
  // below it), on any GPU; nullopt when NVML gave no figure for any of them
  // (no permission, MIG) or no process of the job uses a GPU.
  std::optional<uint64_t> memory_bytes;
  // The mean utilization of the GPUs it holds: for an exclusive claim the
  // GPU's, for a shared one the summed SM share of the job's processes
  // (nvmlDeviceGetProcessUtilization), else the whole GPU's; nullopt
  // without GPUs or figures.
  std::optional<double> utilization_percent;
  // Totals over readings: time in DATA_LOADING with its GPUs' utilization
  // known, and the part of it with every one of its GPUs below kIdlePercent.
  double data_loading_seconds = 0;
  double data_stall_seconds = 0;
  // Time its GPUs' utilization was known for at all: the stall's share is
  // data_stall_seconds over this.
  double sampled_seconds = 0;
  // Its GPU limits and what its processes did under them, from its share
  // file (mlos run --gpu-memory/--gpu-share); nullopt without one, or when
  // the file could not be read (share_note says why).
  std::optional<gpushare::ShareFileView> share;
  std::string share_note;
};

class JobGpuAccounting {
 public:
  // A GPU less busy than this counts as idle (NVML: percent of the sample
  // period in which a kernel ran).
  static constexpr unsigned kIdlePercent = 5;
  // A process and its ancestors, innermost first, with their start times
  // (os::lineage): an owner's pid reused by another process is not the
  // owner. NVML's pids are the host's, so mlosd must see the host's pids.
  using Lineage = std::function<std::vector<ProcessId>(int pid)>;

  // One reading: `jobs` as sampled now (id, owner, GPUs, phase), `gpus`
  // NVML's view, `elapsed_seconds` since the previous reading (the phase
  // and utilization now stand for that interval). Jobs not in `jobs` are
  // forgotten.
  void update(const std::vector<JobSample>& jobs, const gpu::GpuInventory& gpus, double elapsed_seconds,
              const Lineage& lineage);
  const std::map<uint64_t, JobGpuFigures>& figures() const { return figures_; }

 private:
  std::map<uint64_t, JobGpuFigures> figures_;
};

}  // namespace mlos::daemon
