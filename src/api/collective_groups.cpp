// SPDX-License-Identifier: Apache-2.0
#include "api/collective_groups.h"

#include <chrono>
#include <cstdlib>

namespace mlos {

CollectiveGroups& CollectiveGroups::instance() {
  static CollectiveGroups* groups = new CollectiveGroups;  // never destroyed: used until exit
  return *groups;
}

std::shared_ptr<CollectiveGroups::Slot> CollectiveGroups::slot_of(const void* handle) {
  std::lock_guard lock(mu_);
  auto& s = slots_[handle];
  if (!s) s = std::make_shared<Slot>();
  return s;
}

void CollectiveGroups::set_store(const void* handle, std::shared_ptr<gloo::rendezvous::Store> store) {
  std::shared_ptr<Slot> slot = slot_of(handle);
  std::lock_guard op_lock(slot->op_mu);
  slot->store = std::move(store);
}

void CollectiveGroups::set_overrides(const void* handle, collectives::GroupOverrides overrides) {
  std::shared_ptr<Slot> slot = slot_of(handle);
  std::lock_guard op_lock(slot->op_mu);
  slot->overrides = std::move(overrides);
}

Status CollectiveGroups::with_group(const void* handle, const Job& job, int rank, int world_size, uint64_t bytes,
                                    const std::function<collectives::GroupPlacement()>& placement,
                                    const std::function<Status(collectives::ProcessGroup&)>& op) {
  std::shared_ptr<Slot> slot = slot_of(handle);
  std::lock_guard op_lock(slot->op_mu);
  const auto start = std::chrono::steady_clock::now();
  Status status = run_on_slot(*slot, rank, world_size, placement, op);
  const auto ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  const uint64_t reduced = status ? bytes : 0;
  slot->nanoseconds += ns;
  ++slot->calls;
  slot->bytes += reduced;
  job.count_collective(reduced, ns);  // the same figures, for mlosd's phase page
  return status;
}

Status CollectiveGroups::run_on_slot(Slot& slot, int rank, int world_size,
                                     const std::function<collectives::GroupPlacement()>& placement,
                                     const std::function<Status(collectives::ProcessGroup&)>& op) {
  if (slot.group && !slot.group->broken()) {
    if ((rank >= 0 && rank != slot.group->rank()) || (world_size >= 0 && world_size != slot.group->world_size())) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT,
                        "this handle's group is rank " + std::to_string(slot.group->rank()) + " of " +
                            std::to_string(slot.group->world_size()) + ", not rank " + std::to_string(rank) +
                            " of " + std::to_string(world_size));
    }
    return op(*slot.group);
  }
  auto config =
      collectives::group_config_from(rank, world_size, [](const char* n) { return std::getenv(n); }, slot.store,
                                     slot.overrides);
  if (!config) return config.error();
  if (slot.group) ++slot.generation;  // the last one broke
  config->prefix += "/" + std::to_string(slot.generation);
  slot.group.reset();
  auto group = collectives::ProcessGroup::connect(*config, placement());
  if (!group) {
    ++slot.generation;  // a failed rendezvous leaves keys behind too
    return group.error();
  }
  slot.group = std::move(*group);
  return op(*slot.group);
}

CollectiveGroups::Tally CollectiveGroups::tally(const void* handle) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(handle);
    if (it == slots_.end()) return {};
    slot = it->second;
  }
  return Tally{slot->nanoseconds.load(), slot->calls.load(), slot->bytes.load()};
}

void CollectiveGroups::drop(const void* handle) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(handle);
    if (it == slots_.end()) return;
    slot = std::move(it->second);
    slots_.erase(it);
  }
  std::lock_guard op_lock(slot->op_mu);  // an operation in flight ends first
  slot->group.reset();
}

}  // namespace mlos
