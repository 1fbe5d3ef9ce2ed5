// SPDX-License-Identifier: Apache-2.0
#include "gpu/gpu_topology.h"

#include <cctype>
#include <mutex>
#include <optional>

namespace mlos::gpu {

namespace {

// The one node holding every CPU of `cpus`, -1 if they span nodes or are
// unknown.
int node_holding(const Topology& topo, const CpuSet& cpus) {
  if (cpus.empty()) return -1;
  for (const auto& n : topo.nodes) {
    if (!n.cpus.empty() && cpus.minus(n.cpus).empty()) return n.os_index;
  }
  return -1;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void add_nvml_gpus(Topology& topo, const GpuInventory& inv) {
  for (const GpuDevice& d : inv.gpus) {
    Gpu* g = nullptr;
    for (auto& x : topo.gpus) {
      if (lower(x.pci_busid) == lower(d.pci_busid)) g = &x;
    }
    if (g == nullptr) {
      topo.gpus.push_back(Gpu{});
      g = &topo.gpus.back();
      g->pci_busid = d.pci_busid;
      g->vendor_id = 0x10de;  // NVML lists NVIDIA's devices only
    }
    g->name = d.name;
    g->uuid = d.uuid;
    g->nvml_index = static_cast<int>(d.index);
    g->memory_total = d.memory_total;
    g->minor = d.minor_number ? static_cast<int>(*d.minor_number) : -1;
    if (d.numa_node >= 0) {
      g->numa_node = d.numa_node;
    } else if (g->numa_node < 0) {
      g->numa_node = node_holding(topo, d.cpu_affinity);
      if (g->numa_node < 0 && topo.nodes.size() == 1) g->numa_node = topo.nodes.front().os_index;
    }
  }
  if (inv.gpus.empty()) {
    topo.gpu_note = inv.absent_reason.empty() ? "NVML lists no GPU" : inv.absent_reason;
    for (const auto& s : inv.skipped) topo.gpu_note += "; skipped: " + s;
  }
}

Topology with_nvml_gpus(const Topology& topology) {
  static std::once_flag once;
  static std::optional<GpuInventory> inventory;
  std::call_once(once, [] { inventory.emplace(discover_gpus()); });
  Topology t = topology;
  add_nvml_gpus(t, *inventory);
  t.index();
  return t;
}

}  // namespace mlos::gpu
