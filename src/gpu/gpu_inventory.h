/* SPDX-License-Identifier: Apache-2.0 */
// The GPUs of this machine as NVML reports them, one snapshot: identity
// (UUID, name, PCI bus id), memory, where each is attached (NUMA node and
// CPU affinity, NVML's cross-checked with the kernel's sysfs), MIG mode,
// and the figures that change (utilization, memory used, processes,
// clock-event reasons, power, temperature). Like DCGM, every figure NVML
// does not give is unknown (std::nullopt) with the reason kept, never 0.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cpu_set.h"

namespace mlos::gpu {

class NvmlLibrary;

struct GpuProcess {
  uint32_t pid = 0;
  std::optional<uint64_t> used_bytes;  // unknown where NVML cannot say (no permission, MIG)
};

struct GpuDevice {
  unsigned index = 0;     // NVML's index (the order CUDA_DEVICE_ORDER=PCI_BUS_ID gives)
  std::string uuid;       // "GPU-..." (what CUDA_VISIBLE_DEVICES takes)
  std::string name;       // "NVIDIA H200"
  std::string pci_busid;  // the kernel's form, "0000:3b:00.0" (NVML writes "00000000:3B:00.0")
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  uint64_t memory_free = 0;
  // The NUMA node the device hangs off (sysfs numa_node); -1 unknown.
  int numa_node = -1;
  // The CPUs close to it: NVML's (node scope), else sysfs local_cpulist.
  CpuSet cpu_affinity;
  // nvmlDeviceGetNumaNodeId: the GPU's own memory node on machines where
  // GPU memory is a NUMA node (Grace Hopper); not where CPUs go.
  std::optional<int> memory_numa_node;
  // N of its device file /dev/nvidiaN (character device 195:N): what the
  // devices cgroup allows or denies.
  std::optional<unsigned> minor_number;
  std::optional<bool> mig_enabled;
  std::optional<unsigned> utilization_percent;         // SMs busy over NVML's last sample period
  std::optional<unsigned> memory_utilization_percent;  // memory controller busy
  std::optional<unsigned> power_milliwatts;
  std::optional<unsigned> temperature_celsius;
  std::optional<uint64_t> clock_event_reasons;  // nvmlClocksEventReason bits
  std::optional<std::vector<GpuProcess>> processes;  // running compute processes
  // pid -> mean SM utilization (percent) over NVML's buffered samples
  // (nvmlDeviceGetProcessUtilization); empty map: no process ran lately;
  // nullopt: NVML cannot say.
  std::optional<std::map<uint32_t, double>> process_sm_percent;
  // "figure: why" for each figure left unknown, and any disagreement
  // between NVML and sysfs about where the GPU is.
  std::vector<std::string> notes;
};

struct GpuInventory {
  std::vector<GpuDevice> gpus;  // ascending index
  std::string driver_version;   // "" if unknown
  std::string nvml_library;     // what was loaded
  // Set when there are no GPUs: why (no NVML, NVML did not start, no
  // devices). GPUs NVML lists but could not describe are in `skipped`.
  std::string absent_reason;
  std::vector<std::string> skipped;
};

// Every GPU `nvml` lists. `sysfs_pci_devices` is where the kernel's PCI
// devices are (a fixture directory in tests). With `locality` false, where
// each GPU is attached (NUMA node, CPUs: sysfs and NVML's affinity) is not
// read: what does not change between mlosd's metrics updates.
GpuInventory read_gpu_inventory(const NvmlLibrary& nvml, const std::string& sysfs_pci_devices = "/sys/bus/pci/devices",
                                bool locality = true);

// NvmlLibrary::open, then read_gpu_inventory; without NVML, an empty
// inventory whose absent_reason says why. Never fails.
GpuInventory discover_gpus(const std::string& sysfs_pci_devices = "/sys/bus/pci/devices");

}  // namespace mlos::gpu
