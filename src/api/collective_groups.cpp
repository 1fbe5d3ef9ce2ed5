// SPDX-License-Identifier: Apache-2.0
#include "api/collective_groups.h"

#include <chrono>
#include <cstdlib>

#include "os/environment.h"

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
  tally_into(*slot, job, status ? bytes : 0, ns);
  return status;
}

void CollectiveGroups::tally_into(Slot& slot, const Job& job, uint64_t bytes, uint64_t ns) {
  slot.nanoseconds += ns;
  ++slot.calls;
  slot.bytes += bytes;
  job.count_collective(bytes, ns);  // the same figures, for mlosd's phase page
}

void CollectiveGroups::count(const void* handle, const Job& job, uint64_t bytes, uint64_t ns) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    auto it = slots_.find(handle);
    if (it != slots_.end()) slot = it->second;
  }
  if (slot) {
    tally_into(*slot, job, bytes, ns);
  } else {
    job.count_collective(bytes, ns);
  }
}

Result<std::shared_ptr<collectives::ProcessGroup>> CollectiveGroups::group_for_transfer(
    const void* handle, int world_size, const std::function<collectives::GroupPlacement()>& placement) {
  std::shared_ptr<Slot> slot = slot_of(handle);
  const auto usable = [&](const std::shared_ptr<collectives::ProcessGroup>& g) {
    return g && !g->broken() && g->world_size() == world_size;
  };
  {
    std::lock_guard group_lock(slot->group_mu);
    if (usable(slot->group)) return slot->group;
  }
  // None yet (or broken, or another size, which run_on_slot refuses):
  // created as the first collective would create it.
  std::lock_guard op_lock(slot->op_mu);
  Status s = run_on_slot(*slot, -1, world_size, placement, [](collectives::ProcessGroup&) { return Status::Ok(); });
  if (!s) return s.error();
  std::lock_guard group_lock(slot->group_mu);
  return slot->group;
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
  auto config = collectives::group_config_from(rank, world_size, os::env_or_foreign, slot.store, slot.overrides);
  if (!config) return config.error();
  if (slot.group) ++slot.generation;  // the last one broke
  config->prefix += "/" + std::to_string(slot.generation);
  set_group(slot, nullptr);
  auto group = collectives::ProcessGroup::connect(*config, placement());
  if (!group) {
    ++slot.generation;  // a failed rendezvous leaves keys behind too
    return group.error();
  }
  set_group(slot, std::move(*group));
  return op(*slot.group);
}

void CollectiveGroups::set_group(Slot& slot, std::shared_ptr<collectives::ProcessGroup> group) {
  std::lock_guard group_lock(slot.group_mu);
  slot.group = std::move(group);
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
  set_group(*slot, nullptr);  // a transfer still pending keeps it until waited for
}

}  // namespace mlos
