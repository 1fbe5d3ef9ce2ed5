/* SPDX-License-Identifier: Apache-2.0 */
// Loading the machine topology through hwloc: the running machine, an hwloc
// synthetic description ("pack:2 numa:2 core:8 pu:2"), or an hwloc XML file
// (which can carry PCI devices such as GPUs). The one place topology is read.
#pragma once

#include <string>

#include "core/status.h"
#include "core/topology.h"

namespace mlos::os {

struct TopologySource {
  enum Kind { kThisMachine, kSynthetic, kXmlFile } kind = kThisMachine;
  std::string spec;  // synthetic description or XML path
  // This machine's CPUs and nodes that this process may not use (its
  // cpuset's) count too (hwloc's INCLUDE_DISALLOWED): for mlosd managing
  // the whole node from a narrowed cgroup (node_cpus "root-cgroup").
  bool include_disallowed = false;

  // "" -> this machine; "synthetic:<desc>"; "xml:<path>". INVALID_ARGUMENT
  // for anything else.
  static Result<TopologySource> parse(const std::string& text);
  std::string describe() const;
};

// Loads and converts to a Topology. GPUs are PCI devices of class 0x03xx
// (display/3D) from vendors NVIDIA (0x10de), AMD (0x1002) or Intel (0x8086
// with class 0x0380); their NUMA node is hwloc's nearest NUMA node.
Result<Topology> load_topology(const TopologySource& source);

// The process-wide topology, loaded once from MLOS_TOPOLOGY (same syntax as
// TopologySource::parse) or this machine. Errors are sticky.
Result<Topology> shared_topology();

}  // namespace mlos::os
