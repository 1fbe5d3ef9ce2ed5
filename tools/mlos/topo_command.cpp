// SPDX-License-Identifier: Apache-2.0
// mlos topo: what the library sees.
#include <iostream>

#include "cli_output.h"
#include "commands.h"
#include "engine/ledger_claim_broker.h"

namespace mlos::cli {

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
  if (t.gpus.empty()) std::cout << "GPUs: none found\n";
  for (const auto& g : t.gpus) {
    std::cout << "GPU " << g.name << " at " << g.pci_busid << ", NUMA node "
              << (g.numa_node < 0 ? std::string("unknown") : std::to_string(g.numa_node)) << "\n";
  }
  return kExitOk;
}

}  // namespace mlos::cli
