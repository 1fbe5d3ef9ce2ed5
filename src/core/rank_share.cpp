// SPDX-License-Identifier: Apache-2.0
#include "core/rank_share.h"

#include <algorithm>
#include <string>

namespace mlos {

namespace {

// The CPUs of `pool` on one node, cut into units (cores or single PUs) in
// core order.
struct NodeUnits {
  int node = 0;
  std::vector<CpuSet> units;
};

std::vector<NodeUnits> units_by_node(const Topology& t, const CpuSet& pool, bool per_core) {
  std::vector<NodeUnits> out;
  for (const NumaNode& n : t.nodes) {
    NodeUnits nu{n.os_index, {}};
    for (int ci : n.cores) {
      CpuSet core;
      for (int pu : t.cores[ci].pus) {
        if (pool.test(pu)) core.set(pu);
      }
      if (core.empty()) continue;
      if (per_core) {
        nu.units.push_back(core);
      } else {
        for (int pu : core.to_vector()) nu.units.push_back(CpuSet::of({pu}));
      }
    }
    if (!nu.units.empty()) out.push_back(std::move(nu));
  }
  return out;
}

// How many ranks each node gets (same order as `nodes`), for world >= the
// number of nodes: proportional to the node's units, largest remainder.
// Here is where a GPU-aware split would put each rank on its GPU's node.
std::vector<int> assign_nodes(const std::vector<NodeUnits>& nodes, int world) {
  size_t total = 0;
  for (const auto& n : nodes) total += n.units.size();
  std::vector<int> ranks(nodes.size());
  std::vector<std::pair<size_t, size_t>> remainders;  // (remainder numerator, node position)
  int given = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const size_t scaled = static_cast<size_t>(world) * nodes[i].units.size();
    ranks[i] = static_cast<int>(scaled / total);
    given += ranks[i];
    remainders.emplace_back(scaled % total, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < world; ++k, ++given) ranks[remainders[k].second] += 1;
  return ranks;
}

CpuSet join(const std::vector<CpuSet>& units, size_t first, size_t last) {
  CpuSet s;
  for (size_t i = first; i < last; ++i) s = s | units[i];
  return s;
}

}  // namespace

Result<RankShare> rank_share(const Topology& t, const CpuSet& pool, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "local rank " + std::to_string(rank) + " of " +
                                                     std::to_string(world) +
                                                     " ranks: need 0 <= rank < ranks");
  }
  const CpuSet usable = pool & t.all_cpus();
  if (usable.empty()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "no CPU of \"" + pool.to_list() + "\" is on this topology");
  }
  const int cores = t.physical_cores_in(usable);
  RankShare share;
  if (world > usable.count()) {
    // More ranks than CPUs: one CPU each, round-robin in node and core order.
    const auto units = units_by_node(t, usable, /*per_core=*/false);
    std::vector<CpuSet> flat;
    for (const auto& n : units) flat.insert(flat.end(), n.units.begin(), n.units.end());
    share.cpus = flat[static_cast<size_t>(rank) % flat.size()];
    share.shared = true;
  } else {
    const auto nodes = units_by_node(t, usable, /*per_core=*/world <= cores);
    if (static_cast<size_t>(world) >= nodes.size()) {
      const std::vector<int> per_node = assign_nodes(nodes, world);
      int first_rank = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        const int r = per_node[i];
        if (rank < first_rank + r) {
          const size_t n = nodes[i].units.size();
          const size_t j = static_cast<size_t>(rank - first_rank);
          share.cpus = join(nodes[i].units, j * n / r, (j + 1) * n / r);
          break;
        }
        first_rank += r;
      }
    } else {
      // Fewer ranks than nodes: whole nodes, contiguous, balanced by units.
      size_t total = 0;
      for (const auto& n : nodes) total += n.units.size();
      size_t next = 0, done = 0;
      for (int r = 0; r <= rank; ++r) {
        CpuSet s;
        const size_t nodes_left_for_others = static_cast<size_t>(world - 1 - r);
        do {
          s = s | join(nodes[next].units, 0, nodes[next].units.size());
          done += nodes[next].units.size();
          ++next;
        } while (next < nodes.size() - nodes_left_for_others &&
                 (r == world - 1 || done * world < (static_cast<size_t>(r) + 1) * total));
        if (r == rank) share.cpus = s;
      }
    }
  }
  share.physical_cores = std::max(1, t.physical_cores_in(share.cpus));
  for (const NumaNode& n : t.nodes) {
    if (n.cpus.intersects(share.cpus)) share.nodes.push_back(n.os_index);
  }
  return share;
}

}  // namespace mlos
