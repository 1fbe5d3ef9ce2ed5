// SPDX-License-Identifier: Apache-2.0
#include "engine/rank_bound.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "os/environment.h"
#include "os/hwloc_topology.h"
#include "os/own_threads.h"

namespace mlos {

namespace {

Result<int> env_int(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr) return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(name) + " is not set");
  int out = 0;
  const char* end = v + strlen(v);
  auto [p, ec] = std::from_chars(v, end, out);
  if (ec != std::errc() || p != end || p == v) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      std::string(name) + "=\"" + v + "\" is not a decimal integer");
  }
  return out;
}

}  // namespace

Result<std::optional<RankSplit>> decide_rank_split(const Topology& topology, const CpuSet& affinity,
                                                   const EnvLookup& env) {
  const char* off = env("MLOS_RANK_SPLIT");
  if (off != nullptr && strcmp(off, "0") == 0) return std::optional<RankSplit>();
  const char* world_text = env("LOCAL_WORLD_SIZE");
  const char* envelope_text = env("MLOS_CPUS");
  if (world_text == nullptr || !*world_text || envelope_text == nullptr || !*envelope_text) {
    return std::optional<RankSplit>();
  }
  auto world = env_int(env, "LOCAL_WORLD_SIZE");
  if (!world) return world.error();
  if (*world < 1) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "LOCAL_WORLD_SIZE=" + std::to_string(*world) + " is below 1");
  }
  if (*world == 1) return std::optional<RankSplit>();
  auto rank = env_int(env, "LOCAL_RANK");
  if (!rank) return rank.error();
  if (*rank < 0 || *rank >= *world) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "LOCAL_RANK=" + std::to_string(*rank) + " is outside [0, " +
                                                     std::to_string(*world) + ") (LOCAL_WORLD_SIZE)");
  }
  auto envelope = CpuSet::parse_list(envelope_text);
  if (!envelope) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      std::string("MLOS_CPUS=\"") + envelope_text + "\" is not a CPU list: " + envelope.error().message);
  }
  if (!(affinity == *envelope)) return std::optional<RankSplit>();  // already placed by someone
  auto share = rank_share(topology, affinity, *rank, *world);
  if (!share) return share.error();
  return std::optional<RankSplit>(RankSplit{*rank, *world, *envelope, std::move(*share)});
}

Status apply_rank_split(os::Kernel& kernel, const RankSplit& split, const std::vector<pid_t>& tids) {
  for (pid_t tid : tids) {
    auto mask = kernel.affinity(tid);
    if (!mask) {
      if (mask.error().code == MLOS_ERR_NO_SUCH_THREAD) continue;
      return mask.error();
    }
    if (!(*mask == split.envelope)) continue;
    Status s = kernel.set_affinity(tid, split.share.cpus);
    if (!s && s.error().code != MLOS_ERR_NO_SUCH_THREAD) return s;
  }
  return Status::Ok();
}

namespace {

Result<ProcessBound> decide_and_apply() {
  auto topo = os::shared_topology();
  if (!topo) return topo.error();
  ProcessBound bound;
  if (topo->source != "this machine") {
    bound.cpus = topo->all_cpus();
    if (const char* env = os::env("MLOS_ALLOWED_CPUS"); env && *env) {
      auto parsed = CpuSet::parse_list(env);
      if (!parsed) return parsed.error();
      bound.cpus = *parsed;
    }
  } else {
    os::Kernel& kernel = os::linux_kernel();
    auto affinity = kernel.affinity(getpid());
    if (!affinity) return affinity.error();
    bound.cpus = *affinity;
    auto split = decide_rank_split(*topo, *affinity, os::env_or_foreign);
    if (!split) return split.error();
    if (*split) {
      auto tids = os::own_thread_ids();
      if (!tids) return tids.error();
      Status s = apply_rank_split(kernel, **split, *tids);
      if (!s) return s.error();
      bound.cpus = (*split)->share.cpus;
      bound.split = std::move(*split);
    }
  }
  bound.recommended_threads = std::max(1, topo->physical_cores_in(bound.cpus));
  return bound;
}

}  // namespace

Result<ProcessBound> process_bound() {
  static std::mutex mu;
  static std::optional<Result<ProcessBound>> cached;
  std::lock_guard lock(mu);
  if (!cached) cached.emplace(decide_and_apply());
  return *cached;
}

}  // namespace mlos
