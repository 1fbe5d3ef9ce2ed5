/* SPDX-License-Identifier: Apache-2.0 */
// Choosing GPUs for a request: which NVIDIA GPUs (by UUID) a job gets and
// the NUMA node they hang off, where its CPUs and memory then come from
// (plan_placement). Pure logic over Topology::gpus; the GPUs' UUIDs and
// nodes come from NVML and sysfs (gpu/gpu_topology.h).
//
// A GPU claim is exclusive by default, as every GPU scheduler makes it
// (the Kubernetes device plugin, Slurm's gres): no other claim may hold the
// GPU. A shared claim overlaps other shared claims, never exclusive ones,
// exactly like shared CPUs.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/comma_list.h"
#include "core/status.h"
#include "core/topology.h"

namespace mlos {

struct GpuRequest {
  int count = 0;                   // any `count` GPUs
  std::vector<std::string> uuids;  // or these (full UUIDs or unique prefixes); count is then 0 or their number
  bool exclusive = true;
  // The GPUs the requester may use (its CUDA_VISIBLE_DEVICES resolved to
  // UUIDs, its envelope's GPUs): the outer bound. nullopt: every GPU.
  std::optional<std::vector<std::string>> within;

  bool wanted() const { return count > 0 || !uuids.empty(); }
  // Whether `within` lets the requester have the GPU `uuid`.
  bool allows(const std::string& uuid) const;
  // Narrows `within` to the GPUs in `bound` (all of them when unset).
  void narrow_within(std::vector<std::string> bound);
};

// What other (competing) claims hold, by UUID.
struct GpuUsage {
  std::set<std::string> exclusive;
  std::map<std::string, int> shared;  // UUID -> number of shared claims

  // Books (sign +1) or unbooks (-1) a claim of `uuids`.
  void add(const std::vector<std::string>& uuids, bool exclusive, int sign);
  int load(const std::string& uuid) const;
};

struct GpuChoice {
  std::vector<std::string> uuids;  // full UUIDs, in the order chosen
  // The node of the chosen GPUs (of most of them when they span nodes);
  // -1 when unknown.
  int numa_node = -1;
};

// Picks the GPUs. Errors (the message says what was asked and what there is):
//  INVALID_ARGUMENT   count < 0; count != number of uuids; a UUID twice
//  NOT_FOUND          a UUID (prefix) no GPU has, or one several have
//  INSUFFICIENT_GPUS  no claimable GPU (gpu_note says why), fewer than
//                     asked, or a UUID outside `within`
//  GPUS_BUSY          enough GPUs, but held by other claims
// Among free GPUs it prefers the node `numa_preference` (>= 0), else one
// node holding them all, least shared first, then NVML index order.
Result<GpuChoice> plan_gpus(const Topology& topology, const GpuUsage& usage, const GpuRequest& request,
                            int numa_preference = -1);

// The GPUs a CUDA_VISIBLE_DEVICES value names, as full UUIDs, in its
// order. Like CUDA: items are NVML indices or (prefixes of) "GPU-" UUIDs,
// separated by commas; the first item that names no GPU ends the list
// (CUDA hides it and everything after it); "" hides every GPU. Indices are
// read in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID), which is why mlOS
// itself always writes UUIDs.
std::vector<std::string> visible_gpu_uuids(const Topology& topology, std::string_view cuda_visible_devices);

// Narrows request.within to the GPUs `cuda_visible_devices` (the
// requester's CUDA_VISIBLE_DEVICES; nullptr: unset, nothing changes) shows.
void bound_by_visible_devices(GpuRequest& request, const Topology& topology, const char* cuda_visible_devices);

}  // namespace mlos
