// SPDX-License-Identifier: Apache-2.0
// mlos topo: what the library sees.
#include <iostream>

#include "cli_output.h"
#include "commands.h"
#include "engine/ledger_claim_broker.h"
#include "gpu/gpu_inventory.h"

namespace mlos::cli {

namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// NVML's view (docs/gpu.md): every figure, null where NVML did not give
// it, with the reasons in "notes".
nlohmann::json nvml_json(const gpu::GpuInventory& inv) {
  nlohmann::json j{{"library", inv.nvml_library},
                   {"driver_version", inv.driver_version},
                   {"absent_reason", inv.absent_reason},
                   {"skipped", inv.skipped},
                   {"gpus", nlohmann::json::array()}};
  for (const auto& g : inv.gpus) {
    nlohmann::json processes = nullptr;
    if (g.processes) {
      processes = nlohmann::json::array();
      for (const auto& p : *g.processes) processes.push_back({{"pid", p.pid}, {"used_bytes", or_null(p.used_bytes)}});
    }
    j["gpus"].push_back({{"index", g.index},
                         {"uuid", g.uuid},
                         {"name", g.name},
                         {"pci_busid", g.pci_busid},
                         {"memory_total_bytes", g.memory_total},
                         {"memory_used_bytes", g.memory_used},
                         {"memory_free_bytes", g.memory_free},
                         {"numa_node", g.numa_node},
                         {"cpu_affinity", g.cpu_affinity.to_list()},
                         {"memory_numa_node", or_null(g.memory_numa_node)},
                         {"minor_number", or_null(g.minor_number)},
                         {"mig_enabled", or_null(g.mig_enabled)},
                         {"utilization_percent", or_null(g.utilization_percent)},
                         {"memory_utilization_percent", or_null(g.memory_utilization_percent)},
                         {"power_milliwatts", or_null(g.power_milliwatts)},
                         {"temperature_celsius", or_null(g.temperature_celsius)},
                         {"clock_event_reasons", or_null(g.clock_event_reasons)},
                         {"processes", processes},
                         {"notes", g.notes}});
  }
  return j;
}

void print_nvml(const gpu::GpuInventory& inv) {
  if (inv.gpus.empty()) {
    std::cout << "NVIDIA GPUs: none (" << inv.absent_reason << ")\n";
  } else {
    std::cout << "NVIDIA GPUs (NVML, driver " << (inv.driver_version.empty() ? "unknown" : inv.driver_version)
              << "): " << inv.gpus.size() << "\n";
  }
  for (const auto& g : inv.gpus) {
    std::cout << "  GPU " << g.index << ": " << g.name << " " << g.uuid << " at " << g.pci_busid << ", "
              << human_bytes(g.memory_total) << " (" << human_bytes(g.memory_used) << " used), NUMA node "
              << (g.numa_node < 0 ? std::string("unknown") : std::to_string(g.numa_node)) << ", CPUs "
              << (g.cpu_affinity.empty() ? std::string("unknown") : g.cpu_affinity.to_list())
              << (g.mig_enabled.value_or(false) ? ", MIG on" : "") << "\n";
    for (const auto& n : g.notes) std::cout << "    unknown or doubtful: " << n << "\n";
  }
  for (const auto& s : inv.skipped) std::cout << "  skipped: " << s << "\n";
}

}  // namespace

int run_topo(const TopoOptions& options) {
  auto broker = LedgerClaimBroker::for_this_process();
  if (!broker) {
    report_error("topo", broker.error(), options.json);
    return kExitFailure;
  }
  const Topology& t = (*broker)->topology();
  // MLOS_ALLOWED_CPUS may name CPUs a described machine does not have; only
  // existing CPUs can be allowed (the planner ignores the others too).
  const CpuSet allowed = (*broker)->allowed_cpus() & t.all_cpus();
  if (options.json) {
    auto j = json_envelope("topo");
    j["source"] = t.source;
    j["allowed_cpus"] = allowed.to_list();
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : t.nodes) {
      j["nodes"].push_back({{"os_index", n.os_index},
                            {"memory_bytes", n.total_bytes},
                            {"cpus", n.cpus.to_list()},
                            {"allowed_cpus", (n.cpus & allowed).to_list()},
                            {"cores", n.cores.size()}});
    }
    j["cores"] = nlohmann::json::array();
    for (const auto& c : t.cores) {
      j["cores"].push_back({{"index", c.index}, {"package", c.package}, {"numa_node", c.numa_node}, {"pus", c.pus}});
    }
    j["gpus"] = nlohmann::json::array();
    for (const auto& g : t.gpus) {
      j["gpus"].push_back({{"name", g.name}, {"pci_busid", g.pci_busid}, {"vendor_id", g.vendor_id},
                           {"numa_node", g.numa_node}});
    }
    j["nvml"] = nvml_json(gpu::discover_gpus());
    std::cout << dump_json(j, 2) << "\n";
    return kExitOk;
  }
  std::cout << "topology: " << t.source << "\n"
            << "allowed CPUs: " << allowed.to_list() << " (" << allowed.count() << " of " << t.all_cpus().count()
            << ")\n"
            << "NUMA nodes: " << t.nodes.size() << ", cores: " << t.cores.size()
            << ", hardware threads: " << t.all_cpus().count() << "\n";
  for (const auto& n : t.nodes) {
    std::cout << "  node " << n.os_index << ": " << human_bytes(n.total_bytes) << ", " << n.cores.size()
              << " cores, CPUs " << (n.cpus.empty() ? std::string("none") : n.cpus.to_list()) << "\n";
    for (int ci : n.cores) {
      const Core& c = t.cores[ci];
      std::cout << "    core " << c.index << ": PUs";
      for (int pu : c.pus) std::cout << " " << pu << (allowed.test(pu) ? "" : "(not allowed)");
      std::cout << "\n";
    }
  }
  if (t.gpus.empty()) std::cout << "GPUs (PCI, hwloc): none found\n";
  for (const auto& g : t.gpus) {
    std::cout << "GPU " << g.name << " at " << g.pci_busid << ", NUMA node "
              << (g.numa_node < 0 ? std::string("unknown") : std::to_string(g.numa_node)) << "\n";
  }
  print_nvml(gpu::discover_gpus());
  return kExitOk;
}

}  // namespace mlos::cli
