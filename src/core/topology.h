/* SPDX-License-Identifier: Apache-2.0 */
// What the machine looks like, as mlOS sees it: NUMA nodes, physical cores
// and their hardware threads (PUs), GPUs and the node each is attached to.
//
// A plain value built once (by os/hwloc_topology from hwloc, or by tests from
// code) and shared read-only afterwards; no system calls here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu_set.h"

namespace mlos {

struct Core {
  int index = 0;         // logical index, machine-wide
  int package = 0;       // package (socket) logical index
  int numa_node = 0;     // OS index of the node holding this core's PUs
  std::vector<int> pus;  // OS indices of its hardware threads, ascending
};

struct NumaNode {
  int os_index = 0;
  uint64_t total_bytes = 0;  // local memory (0 if unknown)
  CpuSet cpus;               // PUs local to the node (may be empty)
  std::vector<int> cores;    // indices into Topology::cores
};

struct Gpu {
  std::string name;      // OS device name or PCI description
  std::string pci_busid; // "0000:65:00.0"
  uint16_t vendor_id = 0;
  int numa_node = -1;    // -1 if unknown
  // Set for NVIDIA GPUs NVML reports (gpu/gpu_topology.h): only these can
  // be claimed. "" for a GPU hwloc sees but NVML does not.
  std::string uuid;         // "GPU-..." (what CUDA_VISIBLE_DEVICES takes)
  int nvml_index = -1;      // NVML's index (PCI bus order)
  int minor = -1;           // of /dev/nvidiaN (char 195:N); -1 unknown
  uint64_t memory_total = 0;
};

class Topology {
 public:
  std::vector<NumaNode> nodes;  // ascending os_index
  std::vector<Core> cores;      // ascending index
  std::vector<Gpu> gpus;
  // Why no GPU can be claimed (no NVML, no NVIDIA GPU): the reason a GPU
  // request is refused with. "" when GPUs were looked for and found, or
  // not looked for yet.
  std::string gpu_note;
  std::string source;           // "this machine", "synthetic:...", "xml:..."

  // All PUs of all nodes.
  CpuSet all_cpus() const;
  // nullptr if there is no node with that OS index.
  const NumaNode* node(int os_index) const;
  // Index into cores of the core owning PU `cpu`, or -1.
  int core_of_cpu(int cpu) const;
  // OS index of the node owning PU `cpu`, or -1.
  int node_of_cpu(int cpu) const;
  // Number of distinct cores covered by `cpus`.
  int physical_cores_in(const CpuSet& cpus) const;

  // Rebuilds lookup tables; call after filling nodes/cores by hand.
  void index();

 private:
  std::vector<int> core_by_cpu_;
  std::vector<int> node_by_cpu_;
};

// A uniform test topology: `nodes` NUMA nodes of `cores_per_node` cores with
// `threads_per_core` PUs each, numbered like Linux does on many Intel
// machines (all first threads, then all second threads) when
// `siblings_far_apart`, or consecutively (0,1 on core 0) otherwise.
Topology make_uniform_topology(int nodes, int cores_per_node, int threads_per_core,
                               bool siblings_far_apart = false,
                               uint64_t bytes_per_node = uint64_t{64} << 30);

}  // namespace mlos
