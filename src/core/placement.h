/* SPDX-License-Identifier: Apache-2.0 */
// Choosing CPUs and a NUMA node for a request. Pure logic: the caller passes
// the topology, the CPUs the process may use, what other claims hold, and the
// memory that is available; nothing here touches the kernel.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/cpu_set.h"
#include "core/gpu_placement.h"
#include "core/status.h"
#include "core/topology.h"
#include "mlos/training.h"

namespace mlos {

struct PlacementRequest {
  int num_cpus = 1;
  uint64_t memory_bytes = 0;
  int numa_preference = -1;   // -1 = auto
  bool exclusive = false;
  bool single_node = false;   // never span nodes
  bool strict_membind = false;
  GpuRequest gpus;            // none unless gpus.wanted()
};

// What other (competing) claims hold right now.
struct CpuUsage {
  CpuSet exclusive;                 // CPUs exclusively claimed by others
  std::map<int, int> shared_load;   // CPU -> number of shared claims on it
  GpuUsage gpus;                    // GPUs they hold
  int load(int cpu) const {
    auto it = shared_load.find(cpu);
    return it == shared_load.end() ? 0 : it->second;
  }
};

struct MemoryAvailability {
  // Bytes the process can still get: min(MemAvailable, cgroup headroom).
  // UINT64_MAX when unknown.
  uint64_t available_bytes = UINT64_MAX;
  // Free bytes per node OS index; missing = unknown.
  std::map<int, uint64_t> node_free_bytes;
};

struct Placement {
  std::vector<int> cpus;     // in cpu_index order: distinct cores first
  CpuSet cpu_set;
  std::vector<int> nodes;    // node OS indices spanned, primary first
  int primary_node = 0;
  mlos_memory_policy_t memory_policy = MLOS_MEMPOLICY_PREFERRED;
  int physical_cores = 0;    // distinct cores among cpus
  std::vector<std::string> gpus;  // UUIDs granted (empty: none asked for)
  // Set when the CPUs could not all come from the GPUs' NUMA node; says
  // why and where they are instead.
  std::string gpu_note;
};

// Plans a placement. Errors (nothing is reserved either way):
//  INVALID_ARGUMENT   num_cpus < 1 or numa_preference < -1
//  INVALID_NUMA_NODE  preferred node absent or without allowed CPUs
//  INSUFFICIENT_CPUS  more CPUs than allowed (overall, or on the node)
//  CPUS_BUSY          enough allowed CPUs, but claimed by others
//  INSUFFICIENT_MEMORY memory_bytes > available_bytes
//  plan_gpus's errors, when GPUs are asked for
// The message says what was asked and what there is.
//
// With GPUs, these are chosen first (plan_gpus) and, unless the request
// names a node, the CPUs and memory come from the GPUs' node: the
// best practice of matching the NUMA node to the GPU, done for the
// caller. When that node cannot hold the CPUs, they are placed as without
// GPUs and Placement::gpu_note says so.
Result<Placement> plan_placement(const Topology& topology, const CpuSet& allowed,
                                 const CpuUsage& usage, const MemoryAvailability& memory,
                                 const PlacementRequest& request);

}  // namespace mlos
