// SPDX-License-Identifier: Apache-2.0
#include "core/gpu_placement.h"

#include <algorithm>
#include <charconv>
#include <tuple>

namespace mlos {

bool GpuRequest::allows(const std::string& uuid) const {
  return !within || std::find(within->begin(), within->end(), uuid) != within->end();
}

void GpuRequest::narrow_within(std::vector<std::string> bound) {
  std::erase_if(bound, [&](const std::string& u) { return !allows(u); });
  within = std::move(bound);
}

void GpuUsage::add(const std::vector<std::string>& uuids, bool is_exclusive, int sign) {
  for (const auto& u : uuids) {
    if (is_exclusive) {
      if (sign > 0) {
        exclusive.insert(u);
      } else {
        exclusive.erase(u);
      }
    } else if ((shared[u] += sign) <= 0) {
      shared.erase(u);
    }
  }
}

int GpuUsage::load(const std::string& uuid) const {
  auto it = shared.find(uuid);
  return it == shared.end() ? 0 : it->second;
}

namespace {

bool claimable(const Gpu& g) { return !g.uuid.empty(); }

// The claimable GPU whose UUID is `text` or starts with it (CUDA accepts
// prefixes); nullptr with `ambiguous` set when several match.
const Gpu* find_by_uuid(const Topology& topo, const std::string& text, bool* ambiguous) {
  const Gpu* found = nullptr;
  *ambiguous = false;
  for (const auto& g : topo.gpus) {
    if (!claimable(g)) continue;
    if (g.uuid == text) return &g;
    if (g.uuid.compare(0, text.size(), text) == 0) {
      if (found != nullptr) *ambiguous = true;
      found = &g;
    }
  }
  return *ambiguous ? nullptr : found;
}

std::string uuid_list(const Topology& topo) {
  std::string out;
  for (const auto& g : topo.gpus) {
    if (claimable(g)) out += (out.empty() ? "" : ", ") + g.uuid;
  }
  return out.empty() ? "none" : out;
}

bool free_for(const GpuUsage& usage, const std::string& uuid, bool exclusive) {
  if (usage.exclusive.count(uuid)) return false;
  return !exclusive || usage.load(uuid) == 0;
}

std::string holders(const GpuUsage& usage, const std::string& uuid) {
  if (usage.exclusive.count(uuid)) return "held exclusively by another claim";
  return "shared by " + std::to_string(usage.load(uuid)) + " other claim(s)";
}

// The node most of `chosen` hang off (lowest on a tie), -1 if unknown.
int node_of(const std::vector<const Gpu*>& chosen) {
  std::map<int, int> per_node;
  for (const Gpu* g : chosen) {
    if (g->numa_node >= 0) ++per_node[g->numa_node];
  }
  int best = -1, most = 0;
  for (const auto& [node, n] : per_node) {
    if (n > most) best = node, most = n;
  }
  return best;
}

GpuChoice choice_of(const std::vector<const Gpu*>& chosen) {
  GpuChoice c;
  for (const Gpu* g : chosen) c.uuids.push_back(g->uuid);
  c.numa_node = node_of(chosen);
  return c;
}

}  // namespace

std::vector<std::string> visible_gpu_uuids(const Topology& topo, std::string_view value) {
  std::vector<std::string> out;
  for (const auto& item : split_comma_list(value)) {
    const Gpu* g = nullptr;
    int index = -1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec == std::errc() && end == item.data() + item.size()) {
      for (const auto& x : topo.gpus) {
        if (claimable(x) && x.nvml_index == index) g = &x;
      }
    } else {
      bool ambiguous = false;
      g = find_by_uuid(topo, item, &ambiguous);
    }
    if (g == nullptr) break;  // CUDA ignores this item and every later one
    if (std::find(out.begin(), out.end(), g->uuid) == out.end()) out.push_back(g->uuid);
  }
  return out;
}

void bound_by_visible_devices(GpuRequest& request, const Topology& topology, const char* cuda_visible_devices) {
  if (cuda_visible_devices == nullptr) return;
  request.narrow_within(visible_gpu_uuids(topology, cuda_visible_devices));
}

Result<GpuChoice> plan_gpus(const Topology& topo, const GpuUsage& usage, const GpuRequest& req,
                            int numa_preference) {
  if (req.count < 0) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "num_gpus must be >= 0, got " + std::to_string(req.count));
  }
  if (!req.uuids.empty() && req.count != 0 && req.count != static_cast<int>(req.uuids.size())) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "num_gpus " + std::to_string(req.count) + " but " +
                                                     std::to_string(req.uuids.size()) + " GPU UUID(s) given");
  }
  auto within = [&](const Gpu& g) { return req.allows(g.uuid); };
  std::vector<const Gpu*> mine;  // claimable and within the requester's bound
  int on_machine = 0;
  for (const auto& g : topo.gpus) {
    if (!claimable(g)) continue;
    ++on_machine;
    if (within(g)) mine.push_back(&g);
  }
  const std::string bound_text =
      req.within ? " (the GPUs this process may use, its CUDA_VISIBLE_DEVICES or its envelope's: " +
                       (req.within->empty() ? std::string("none") : join_comma_list(*req.within)) + ")"
                 : std::string();
  if (on_machine == 0) {
    return make_error(MLOS_ERR_INSUFFICIENT_GPUS,
                      "no GPU can be claimed: " + (topo.gpu_note.empty() ? "NVML lists no GPU" : topo.gpu_note));
  }

  if (!req.uuids.empty()) {
    std::vector<const Gpu*> chosen;
    for (const auto& text : req.uuids) {
      bool ambiguous = false;
      const Gpu* g = find_by_uuid(topo, text, &ambiguous);
      if (g == nullptr) {
        return make_error(MLOS_ERR_NOT_FOUND, (ambiguous ? "GPU UUID prefix \"" + text + "\" matches several GPUs"
                                                         : "no GPU has UUID \"" + text + "\"") +
                                                  " (GPUs: " + uuid_list(topo) + ")");
      }
      if (std::find(chosen.begin(), chosen.end(), g) != chosen.end()) {
        return make_error(MLOS_ERR_INVALID_ARGUMENT, "GPU " + g->uuid + " asked for twice");
      }
      if (!within(*g)) {
        return make_error(MLOS_ERR_INSUFFICIENT_GPUS, "GPU " + g->uuid + " is not among the GPUs this process may use" +
                                                          bound_text);
      }
      if (!free_for(usage, g->uuid, req.exclusive)) {
        return make_error(MLOS_ERR_GPUS_BUSY, std::string(req.exclusive ? "exclusive " : "shared ") + "GPU " +
                                                  g->uuid + " asked for, but it is " + holders(usage, g->uuid));
      }
      chosen.push_back(g);
    }
    return choice_of(chosen);
  }

  const size_t n = static_cast<size_t>(req.count);
  if (n > mine.size()) {
    return make_error(MLOS_ERR_INSUFFICIENT_GPUS, "requested " + std::to_string(n) + " GPU(s); this machine has " +
                                                      std::to_string(on_machine) +
                                                      (req.within ? ", this process may use " +
                                                                        std::to_string(mine.size()) + bound_text
                                                                  : std::string()));
  }
  std::vector<const Gpu*> free;
  for (const Gpu* g : mine) {
    if (free_for(usage, g->uuid, req.exclusive)) free.push_back(g);
  }
  if (n > free.size()) {
    std::string held;
    for (const Gpu* g : mine) {
      if (!free_for(usage, g->uuid, req.exclusive)) held += (held.empty() ? "" : "; ") + g->uuid + " " + holders(usage, g->uuid);
    }
    return make_error(MLOS_ERR_GPUS_BUSY, "requested " + std::to_string(n) + (req.exclusive ? " exclusive" : " shared") +
                                              " GPU(s); only " + std::to_string(free.size()) + " of " +
                                              std::to_string(mine.size()) + " are free of other claims (" + held + ")");
  }
  // Least shared first, then NVML order (stable over the machine's life).
  std::stable_sort(free.begin(), free.end(), [&](const Gpu* a, const Gpu* b) {
    return std::tuple(usage.load(a->uuid), a->nvml_index) < std::tuple(usage.load(b->uuid), b->nvml_index);
  });
  // One node holding them all: the preferred one, else the one whose
  // chosen GPUs are least shared, then the lowest.
  std::map<int, std::vector<const Gpu*>> by_node;
  for (const Gpu* g : free) by_node[g->numa_node].push_back(g);
  std::vector<const Gpu*> best;
  std::tuple<bool, int, int> best_score{};
  for (const auto& [node, gpus] : by_node) {
    if (node < 0 || gpus.size() < n) continue;
    std::vector<const Gpu*> pick(gpus.begin(), gpus.begin() + static_cast<long>(n));
    int load = 0;
    for (const Gpu* g : pick) load += usage.load(g->uuid);
    const std::tuple<bool, int, int> score{node != numa_preference, load, node};
    if (best.empty() || score < best_score) best = pick, best_score = score;
  }
  if (best.empty()) {
    // They span nodes (or their nodes are unknown): the nodes with the most
    // free GPUs first, so as few nodes as possible are spanned.
    std::vector<std::pair<int, std::vector<const Gpu*>>> nodes(by_node.begin(), by_node.end());
    std::stable_sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
      return std::tuple(a.first != numa_preference, -static_cast<long>(a.second.size())) <
             std::tuple(b.first != numa_preference, -static_cast<long>(b.second.size()));
    });
    for (const auto& [node, gpus] : nodes) {
      for (const Gpu* g : gpus) {
        if (best.size() < n) best.push_back(g);
      }
    }
  }
  return choice_of(best);
}

}  // namespace mlos
