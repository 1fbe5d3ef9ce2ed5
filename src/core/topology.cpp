// SPDX-License-Identifier: Apache-2.0
#include "core/topology.h"

#include <set>

namespace mlos {

CpuSet Topology::all_cpus() const {
  CpuSet all;
  for (const auto& n : nodes) all = all | n.cpus;
  return all;
}

const NumaNode* Topology::node(int os_index) const {
  for (const auto& n : nodes) {
    if (n.os_index == os_index) return &n;
  }
  return nullptr;
}

int Topology::core_of_cpu(int cpu) const {
  return cpu >= 0 && static_cast<size_t>(cpu) < core_by_cpu_.size() ? core_by_cpu_[cpu] : -1;
}

int Topology::node_of_cpu(int cpu) const {
  return cpu >= 0 && static_cast<size_t>(cpu) < node_by_cpu_.size() ? node_by_cpu_[cpu] : -1;
}

int Topology::physical_cores_in(const CpuSet& cpus) const {
  std::set<int> seen;
  for (int c : cpus.to_vector()) seen.insert(core_of_cpu(c));
  return static_cast<int>(seen.size());
}

void Topology::index() {
  int extent = all_cpus().extent();
  for (const auto& c : cores) {
    for (int pu : c.pus) extent = std::max(extent, pu + 1);
  }
  core_by_cpu_.assign(extent, -1);
  node_by_cpu_.assign(extent, -1);
  for (size_t i = 0; i < cores.size(); ++i) {
    for (int pu : cores[i].pus) core_by_cpu_[pu] = static_cast<int>(i);
  }
  for (const auto& n : nodes) {
    for (int pu : n.cpus.to_vector()) node_by_cpu_[pu] = n.os_index;
  }
}

Topology make_uniform_topology(int nodes, int cores_per_node, int threads_per_core,
                               bool siblings_far_apart, uint64_t bytes_per_node) {
  Topology t;
  t.source = "uniform:" + std::to_string(nodes) + "x" + std::to_string(cores_per_node) + "x" +
             std::to_string(threads_per_core);
  const int total_cores = nodes * cores_per_node;
  for (int n = 0; n < nodes; ++n) {
    NumaNode node;
    node.os_index = n;
    node.total_bytes = bytes_per_node;
    for (int k = 0; k < cores_per_node; ++k) {
      Core core;
      core.index = n * cores_per_node + k;
      core.package = n;
      core.numa_node = n;
      for (int t_ = 0; t_ < threads_per_core; ++t_) {
        int pu = siblings_far_apart ? t_ * total_cores + core.index : core.index * threads_per_core + t_;
        core.pus.push_back(pu);
        node.cpus.set(pu);
      }
      node.cores.push_back(core.index);
      t.cores.push_back(core);
    }
    t.nodes.push_back(node);
  }
  t.index();
  return t;
}

}  // namespace mlos
