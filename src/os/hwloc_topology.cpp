// SPDX-License-Identifier: Apache-2.0
#include "os/hwloc_topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "os/environment.h"

namespace mlos::os {

namespace {

CpuSet to_cpuset(hwloc_const_bitmap_t bm) {
  CpuSet s;
  if (bm == nullptr) return s;
  for (int i = hwloc_bitmap_first(bm); i != -1; i = hwloc_bitmap_next(bm, i)) s.set(i);
  return s;
}

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};

bool is_gpu(hwloc_obj_t o) {
  if (o->type != HWLOC_OBJ_PCI_DEVICE) return false;
  unsigned cls = o->attr->pcidev.class_id;
  unsigned vendor = o->attr->pcidev.vendor_id;
  if ((cls >> 8) != 0x03) return false;
  return vendor == 0x10de || vendor == 0x1002 || (vendor == 0x8086 && cls == 0x0380);
}

Topology convert(hwloc_topology_t t) {
  Topology topo;
  const int n_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n_nodes; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
    NumaNode n;
    n.os_index = static_cast<int>(o->os_index);
    n.total_bytes = o->attr ? o->attr->numanode.local_memory : 0;
    n.cpus = to_cpuset(o->cpuset);
    topo.nodes.push_back(n);
  }
  std::sort(topo.nodes.begin(), topo.nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });

  const int n_cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  for (int i = 0; i < n_cores; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, i);
    Core c;
    c.index = i;
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, o);
    c.package = pkg ? static_cast<int>(pkg->logical_index) : 0;
    c.pus = to_cpuset(o->cpuset).to_vector();
    if (c.pus.empty()) continue;  // core with no allowed PU
    c.numa_node = -1;
    for (auto& n : topo.nodes) {
      if (n.cpus.test(c.pus.front())) {
        c.numa_node = n.os_index;
        n.cores.push_back(static_cast<int>(topo.cores.size()));
        break;
      }
    }
    c.index = static_cast<int>(topo.cores.size());
    topo.cores.push_back(c);
  }
  // Machines where hwloc reports PUs without Core objects: one core per PU.
  if (topo.cores.empty()) {
    for (auto& n : topo.nodes) {
      for (int pu : n.cpus.to_vector()) {
        n.cores.push_back(static_cast<int>(topo.cores.size()));
        topo.cores.push_back(Core{static_cast<int>(topo.cores.size()), 0, n.os_index, {pu}});
      }
    }
  }

  for (hwloc_obj_t o = hwloc_get_next_pcidev(t, nullptr); o != nullptr; o = hwloc_get_next_pcidev(t, o)) {
    if (!is_gpu(o)) continue;
    Gpu g;
    char busid[32];
    snprintf(busid, sizeof busid, "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus,
             o->attr->pcidev.dev, o->attr->pcidev.func);
    g.pci_busid = busid;
    g.vendor_id = o->attr->pcidev.vendor_id;
    const char* model = hwloc_obj_get_info_by_name(o, "PCIDevice");
    g.name = model ? model : (o->name ? o->name : "GPU");
    for (hwloc_obj_t child = o->io_first_child; child; child = child->next_sibling) {
      if (child->type == HWLOC_OBJ_OS_DEVICE && child->name) {
        g.name = child->name;
        break;
      }
    }
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(t, o);
    if (parent && parent->nodeset) {
      // Attached below several nodes (e.g. a package-level host bridge):
      // no single local node, so report none rather than guess.
      if (hwloc_bitmap_weight(parent->nodeset) == 1) g.numa_node = hwloc_bitmap_first(parent->nodeset);
    }
    topo.gpus.push_back(g);
  }
  topo.index();
  return topo;
}

}  // namespace

Result<TopologySource> TopologySource::parse(const std::string& text) {
  TopologySource s;
  if (text.empty()) return s;
  if (text.rfind("synthetic:", 0) == 0) {
    s.kind = kSynthetic;
    s.spec = text.substr(10);
  } else if (text.rfind("xml:", 0) == 0) {
    s.kind = kXmlFile;
    s.spec = text.substr(4);
  } else {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "topology source \"" + text + "\" is not \"synthetic:<description>\" or \"xml:<path>\"");
  }
  if (s.spec.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "empty topology source \"" + text + "\"");
  return s;
}

std::string TopologySource::describe() const {
  switch (kind) {
    case kSynthetic:
      return "synthetic:" + spec;
    case kXmlFile:
      return "xml:" + spec;
    default:
      return "this machine";
  }
}

Result<Topology> load_topology(const TopologySource& source) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return make_sys_error(errno, "hwloc_topology_init");
  std::unique_ptr<hwloc_topology, TopologyDeleter> t(raw);
  // I/O devices are needed for GPUs; keep only the interesting ones.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (source.include_disallowed) hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  int rc = 0;
  if (source.kind == TopologySource::kSynthetic) {
    rc = hwloc_topology_set_synthetic(raw, source.spec.c_str());
  } else if (source.kind == TopologySource::kXmlFile) {
    rc = hwloc_topology_set_xml(raw, source.spec.c_str());
  }
  if (rc != 0) {
    return make_sys_error(errno, "hwloc rejected topology source " + source.describe(), MLOS_ERR_INVALID_ARGUMENT);
  }
  if (hwloc_topology_load(raw) != 0) {
    return make_sys_error(errno, "hwloc could not load topology from " + source.describe());
  }
  Topology topo = convert(raw);
  topo.source = source.describe();
  if (topo.nodes.empty() || topo.cores.empty()) {
    return make_error(MLOS_ERR_UNSUPPORTED, "topology from " + source.describe() + " has no NUMA node or no CPU");
  }
  return topo;
}

Result<Topology> shared_topology() {
  static std::once_flag once;
  static std::optional<Result<Topology>> cached;
  std::call_once(once, [] {
    const char* env = os::env("MLOS_TOPOLOGY");
    auto source = TopologySource::parse(env ? env : "");
    cached.emplace(source ? load_topology(*source) : Result<Topology>(source.error()));
  });
  return *cached;
}

}  // namespace mlos::os
