/* SPDX-License-Identifier: Apache-2.0 */
// NVML's GPUs in the machine's Topology, so that placement can claim them:
// each GPU hwloc saw gets NVML's UUID, index and memory (matched by PCI
// bus id), GPUs only NVML lists are added, and each gets the NUMA node its
// CPUs and memory should come from.
#pragma once

#include "core/topology.h"
#include "gpu/gpu_inventory.h"

namespace mlos::gpu {

// Merges `inventory` into `topology.gpus`; sets topology.gpu_note to the
// inventory's absent_reason (and skipped GPUs) when nothing is claimable.
// A GPU's node, in order: sysfs numa_node (NVML's PCI device), hwloc's
// node for the same bus id, the topology node its CPU affinity (NVML's,
// else sysfs local_cpulist) lies in when that is one node, and the only
// node of a one-node machine; else -1 (unknown: placed without a node).
void add_nvml_gpus(Topology& topology, const GpuInventory& inventory);

// discover_gpus() then add_nvml_gpus(), once per process (NVML's start can
// take a second on a machine without the persistence daemon): a copy of
// `topology` that has them. Thread-safe.
Topology with_nvml_gpus(const Topology& topology);

}  // namespace mlos::gpu
