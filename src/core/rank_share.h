/* SPDX-License-Identifier: Apache-2.0 */
// Splitting one allocation between the local ranks of a launcher (torchrun's
// LOCAL_RANK of LOCAL_WORLD_SIZE), so that N ranks started inside
// `mlos run --cpus K` get disjoint shares instead of all of K each. Pure
// logic: the caller passes the topology and the CPUs being split.
//
// The split (docs/placement.md#local-ranks):
//   - Units: physical cores when there are at least as many cores as ranks
//     (a share never splits a core), else single CPUs (PUs), else each rank
//     gets one CPU, round-robin, shared with other ranks (`shared`).
//   - NUMA: with at least as many ranks as nodes, each node gets a number of
//     ranks proportional to its units (largest remainder, ties to the lower
//     node), ranks in order (rank 0 on the first node): no share straddles a
//     node. A node too small for any rank under that rule is left out rather
//     than making one share much smaller than the others. With fewer ranks
//     than nodes, each rank gets whole contiguous nodes, balanced by units.
//   - Within a node, its units in core order are cut into contiguous pieces;
//     when they do not divide evenly (3 cores, 2 ranks) the pieces differ by
//     one unit and the later ranks get the larger ones.
//   - GPU-aware placement (later): when the topology knows the NUMA node of
//     the GPU a rank drives (the LOCAL_RANK-th visible device), ranks should
//     be assigned to their GPU's node instead of in order. assign_nodes() in
//     rank_share.cpp is where that choice is made; nothing else changes.
#pragma once

#include <vector>

#include "core/cpu_set.h"
#include "core/status.h"
#include "core/topology.h"

namespace mlos {

struct RankShare {
  CpuSet cpus;
  int physical_cores = 1;  // distinct cores in cpus, at least 1: the rank's thread-pool size
  std::vector<int> nodes;  // OS indices of the nodes cpus lie on
  bool shared = false;     // more ranks than CPUs: other ranks get some of these CPUs too
};

// Rank `rank`'s share of `pool` (the CPUs all `world` local ranks start
// with). Errors, INVALID_ARGUMENT: world < 1, rank outside [0, world),
// pool has no CPU of the topology.
Result<RankShare> rank_share(const Topology& topology, const CpuSet& pool, int rank, int world);

}  // namespace mlos
