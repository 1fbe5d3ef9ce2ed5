// SPDX-License-Identifier: Apache-2.0
#include "engine/thread_registry.h"

namespace mlos {

ThreadRegistry& ThreadRegistry::process_wide() {
  static auto* r = new ThreadRegistry;  // leaked: used until exit
  return *r;
}

std::optional<ThreadBaseline> ThreadRegistry::baseline(pid_t tid) const {
  std::lock_guard lock(mu_);
  auto it = threads_.find(tid);
  if (it == threads_.end()) return std::nullopt;
  return it->second.baseline;
}

void ThreadRegistry::adopt(pid_t tid, uint64_t owner, const ThreadBaseline& baseline) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = threads_.try_emplace(tid, Entry{owner, baseline});
  if (!fresh) it->second.owner = owner;
}

bool ThreadRegistry::adopt_if_free(pid_t tid, uint64_t owner, const ThreadBaseline& baseline) {
  std::lock_guard lock(mu_);
  return threads_.try_emplace(tid, Entry{owner, baseline}).second;
}

void ThreadRegistry::record_memory_policy(pid_t tid, const os::MemoryPolicy& policy) {
  std::lock_guard lock(mu_);
  auto it = threads_.find(tid);
  if (it != threads_.end() && !it->second.baseline.memory_policy) it->second.baseline.memory_policy = policy;
}

bool ThreadRegistry::owns(pid_t tid, uint64_t owner) const {
  std::lock_guard lock(mu_);
  auto it = threads_.find(tid);
  return it != threads_.end() && it->second.owner == owner;
}

std::optional<ThreadBaseline> ThreadRegistry::release(pid_t tid, uint64_t owner) {
  std::lock_guard lock(mu_);
  auto it = threads_.find(tid);
  if (it == threads_.end() || it->second.owner != owner) return std::nullopt;
  ThreadBaseline b = std::move(it->second.baseline);
  threads_.erase(it);
  return b;
}

}  // namespace mlos
