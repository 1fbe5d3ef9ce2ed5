// SPDX-License-Identifier: Apache-2.0
#include "core/placement.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <tuple>

namespace mlos {

namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

// Picks n CPUs out of `usable` (all on the given cores): one PU per core
// first, idle and least-loaded cores first, then second PUs of the same
// cores, and so on. Returns fewer than n only if `usable` has fewer.
std::vector<int> pick_cpus(const Topology& topo, const std::vector<int>& core_ids,
                           const CpuSet& usable, const CpuUsage& usage, int n) {
  struct Candidate {
    int core;
    std::vector<int> pus;  // usable PUs of the core
    int load;              // shared claims on the core's usable PUs
    bool whole;            // every PU of the core is usable
  };
  std::vector<Candidate> cands;
  for (int ci : core_ids) {
    const Core& core = topo.cores[ci];
    Candidate c{ci, {}, 0, true};
    for (int pu : core.pus) {
      if (usable.test(pu)) {
        c.pus.push_back(pu);
        c.load += usage.load(pu);
      } else {
        c.whole = false;
      }
    }
    if (!c.pus.empty()) cands.push_back(std::move(c));
  }
  // Cores nobody else shares first, then whole cores, then by position so
  // that the allocation stays compact (neighbouring cores share caches).
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return std::tuple(a.load, !a.whole, a.core) < std::tuple(b.load, !b.whole, b.core);
  });
  std::vector<int> chosen;
  for (size_t round = 0; static_cast<int>(chosen.size()) < n; ++round) {
    bool any = false;
    for (const auto& c : cands) {
      if (round < c.pus.size()) {
        any = true;
        chosen.push_back(c.pus[round]);
        if (static_cast<int>(chosen.size()) == n) break;
      }
    }
    if (!any) break;
  }
  return chosen;
}

std::string node_list(const std::vector<int>& nodes) {
  std::string out;
  for (int n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

struct NodeOption {
  const NumaNode* node;
  CpuSet usable;
  int usable_cores;  // cores with at least one usable PU
  bool memory_fits;
};

}  // namespace

// plan_placement without GPUs.
static Result<Placement> plan_cpus(const Topology& topo, const CpuSet& allowed_in, const CpuUsage& usage,
                            const MemoryAvailability& memory, const PlacementRequest& req) {
  if (req.num_cpus < 1) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "num_cpus must be >= 1, got " + std::to_string(req.num_cpus));
  }
  if (req.numa_preference < -1) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "numa_node_preference must be -1 (auto) or a node index, got " +
                          std::to_string(req.numa_preference));
  }
  const CpuSet allowed = allowed_in & topo.all_cpus();
  if (req.numa_preference >= 0) {
    const NumaNode* n = topo.node(req.numa_preference);
    if (n == nullptr) {
      return make_error(MLOS_ERR_INVALID_NUMA_NODE, "NUMA node " + std::to_string(req.numa_preference) +
                                                        " does not exist (this machine has " +
                                                        std::to_string(topo.nodes.size()) + " node(s))");
    }
    if (!(n->cpus & allowed).count()) {
      return make_error(MLOS_ERR_INVALID_NUMA_NODE, "NUMA node " + std::to_string(req.numa_preference) +
                                                        " has no CPUs this process may use (allowed: " +
                                                        allowed.to_list() + ")");
    }
  }
  if (req.num_cpus > allowed.count()) {
    return make_error(MLOS_ERR_INSUFFICIENT_CPUS, "requested " + std::to_string(req.num_cpus) +
                                                      " CPUs; this process may use " +
                                                      std::to_string(allowed.count()) + " (" + allowed.to_list() +
                                                      ")");
  }
  if (req.memory_bytes > memory.available_bytes) {
    return make_error(MLOS_ERR_INSUFFICIENT_MEMORY, "requested " + gib(req.memory_bytes) + " of memory; " +
                                                        gib(memory.available_bytes) + " available");
  }

  // CPUs this request may take: allowed, not exclusively held by others, and
  // for an exclusive request not shared with anyone either.
  CpuSet usable = allowed.minus(usage.exclusive);
  if (req.exclusive) {
    for (const auto& [cpu, load] : usage.shared_load) {
      if (load > 0) usable.reset(cpu);
    }
  }

  std::vector<NodeOption> options;
  for (const auto& n : topo.nodes) {
    if (req.numa_preference >= 0 && n.os_index != req.numa_preference) continue;
    NodeOption o{&n, n.cpus & usable, 0, true};
    for (int ci : n.cores) {
      for (int pu : topo.cores[ci].pus) {
        if (o.usable.test(pu)) {
          ++o.usable_cores;
          break;
        }
      }
    }
    auto free_it = memory.node_free_bytes.find(n.os_index);
    o.memory_fits = free_it == memory.node_free_bytes.end() || free_it->second >= req.memory_bytes;
    options.push_back(o);
  }

  auto busy_error = [&](const CpuSet& scope, const std::string& where) -> Error {
    const CpuSet scope_allowed = scope & allowed;
    if (scope_allowed.count() < req.num_cpus) {
      return make_error(MLOS_ERR_INSUFFICIENT_CPUS, "requested " + std::to_string(req.num_cpus) + " CPUs on " +
                                                        where + ", which has " +
                                                        std::to_string(scope_allowed.count()) +
                                                        " CPUs this process may use");
    }
    return make_error(MLOS_ERR_CPUS_BUSY,
                      "requested " + std::to_string(req.num_cpus) + (req.exclusive ? " exclusive" : "") +
                          " CPUs on " + where + "; only " + std::to_string((scope & usable).count()) +
                          " are free of other claims (held exclusively: " + (usage.exclusive & scope).to_list() +
                          ")");
  };

  // With a strict binding the kernel cannot fall back to another node, so
  // the bound nodes' free memory must cover the request.
  const bool strict_memory = req.strict_membind && req.memory_bytes > 0;
  auto memory_error = [&](const std::string& where) -> Error {
    return make_error(MLOS_ERR_INSUFFICIENT_MEMORY, "requested " + gib(req.memory_bytes) +
                                                        " bound (strict) " + where +
                                                        ", but the candidate nodes' free memory is smaller");
  };

  Placement p;
  std::vector<const NodeOption*> fitting;
  for (const auto& o : options) {
    // Bound memory cannot fall back to another node: it must fit.
    if (o.usable.count() >= req.num_cpus && (!strict_memory || o.memory_fits)) fitting.push_back(&o);
  }

  if (!fitting.empty()) {
    // Best node: memory fits, no SMT sharing needed, least shared load,
    // smallest leftover (keeps big nodes whole for big jobs), lowest index.
    auto score = [&](const NodeOption* o) {
      std::vector<int> cpus = pick_cpus(topo, o->node->cores, o->usable, usage, req.num_cpus);
      int load = 0;
      for (int c : cpus) load += usage.load(c);
      return std::tuple(!o->memory_fits, o->usable_cores < req.num_cpus, load,
                        o->usable.count() - req.num_cpus, o->node->os_index);
    };
    const NodeOption* best = *std::min_element(fitting.begin(), fitting.end(),
                                               [&](auto* a, auto* b) { return score(a) < score(b); });
    p.cpus = pick_cpus(topo, best->node->cores, best->usable, usage, req.num_cpus);
    p.nodes = {best->node->os_index};
  } else if (strict_memory && (req.numa_preference >= 0 || req.single_node) &&
             std::any_of(options.begin(), options.end(),
                         [&](const NodeOption& o) { return o.usable.count() >= req.num_cpus; })) {
    return memory_error("on a single NUMA node");
  } else if (req.numa_preference >= 0) {
    return busy_error(options.front().node->cpus, "NUMA node " + std::to_string(req.numa_preference));
  } else if (req.single_node) {
    int most_usable = 0, most_allowed = 0;
    for (const auto& o : options) {
      most_usable = std::max(most_usable, o.usable.count());
      most_allowed = std::max(most_allowed, (o.node->cpus & allowed).count());
    }
    return make_error(most_allowed >= req.num_cpus ? MLOS_ERR_CPUS_BUSY : MLOS_ERR_INSUFFICIENT_CPUS,
                      "requested " + std::to_string(req.num_cpus) +
                          " CPUs on a single NUMA node; the largest node has " + std::to_string(most_allowed) +
                          " CPUs this process may use, at most " + std::to_string(most_usable) +
                          " of them free of other claims");
  } else {
    // Span the fewest nodes: take the nodes with the most usable CPUs first
    // until they hold enough, then pick across all of them at once so that
    // whole cores on every spanned node come before any SMT sibling.
    std::vector<const NodeOption*> order;
    for (const auto& o : options) {
      if (!o.usable.empty()) order.push_back(&o);
    }
    std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
      return std::tuple(-a->usable.count(), a->node->os_index) < std::tuple(-b->usable.count(), b->node->os_index);
    });
    int have = 0;
    uint64_t memory_have = 0;
    CpuSet span_usable;
    std::vector<int> span_cores;
    for (const NodeOption* o : order) {
      if (have >= req.num_cpus && (!strict_memory || memory_have >= req.memory_bytes)) break;
      have += o->usable.count();
      auto free_it = memory.node_free_bytes.find(o->node->os_index);
      memory_have = free_it == memory.node_free_bytes.end() ? UINT64_MAX : memory_have + free_it->second;
      span_usable = span_usable | o->usable;
      span_cores.insert(span_cores.end(), o->node->cores.begin(), o->node->cores.end());
      p.nodes.push_back(o->node->os_index);
    }
    if (have < req.num_cpus) return busy_error(topo.all_cpus(), "this machine");
    if (strict_memory && memory_have < req.memory_bytes) return memory_error("on the nodes it could use");
    p.cpus = pick_cpus(topo, span_cores, span_usable, usage, req.num_cpus);
  }

  for (int c : p.cpus) p.cpu_set.set(c);
  // Keep only nodes that received CPUs, unless their memory is needed for a
  // strict binding; the primary node holds the most CPUs.
  std::vector<int> nodes;
  int most = 0;
  for (int n : p.nodes) {
    int held = (topo.node(n)->cpus & p.cpu_set).count();
    if (held == 0 && !strict_memory) continue;
    nodes.push_back(n);
    if (held > most) {
      most = held;
      p.primary_node = n;
    }
  }
  p.nodes = nodes;
  p.physical_cores = topo.physical_cores_in(p.cpu_set);
  if (p.nodes.size() == 1) {
    p.memory_policy = req.strict_membind ? MLOS_MEMPOLICY_BIND : MLOS_MEMPOLICY_PREFERRED;
  } else {
    p.memory_policy = req.strict_membind ? MLOS_MEMPOLICY_BIND : MLOS_MEMPOLICY_INTERLEAVE;
  }
  return p;
}

Result<Placement> plan_placement(const Topology& topo, const CpuSet& allowed, const CpuUsage& usage,
                                 const MemoryAvailability& memory, const PlacementRequest& req) {
  if (!req.gpus.wanted()) return plan_cpus(topo, allowed, usage, memory, req);
  auto gpus = plan_gpus(topo, usage.gpus, req.gpus, req.numa_preference);
  if (!gpus) return gpus.error();
  std::optional<Result<Placement>> p;
  if (req.numa_preference < 0 && gpus->numa_node >= 0) {
    PlacementRequest near = req;
    near.numa_preference = gpus->numa_node;
    p.emplace(plan_cpus(topo, allowed, usage, memory, near));
    if (!*p) {
      const std::string why = p->error().message;
      p.emplace(plan_cpus(topo, allowed, usage, memory, req));
      if (*p) {
        (*p)->gpu_note = "CPUs not on the GPUs' NUMA node " + std::to_string(gpus->numa_node) + " (" + why +
                         "); placed on node(s) " + node_list((*p)->nodes) + " instead";
      }
    }
  } else {
    p.emplace(plan_cpus(topo, allowed, usage, memory, req));
  }
  if (!*p) return *p;
  (*p)->gpus = gpus->uuids;
  return std::move(*p);
}

}  // namespace mlos
