#include "api/collective_groups.h"

#include <cstdlib>

namespace mlos {

CollectiveGroups& CollectiveGroups::instance() {
  static CollectiveGroups* groups = new CollectiveGroups;  // never destroyed: used until exit
  return *groups;
}

Status CollectiveGroups::with_group(const void* handle, int rank, int world_size,
                                    const std::function<Status(collectives::ProcessGroup&)>& op) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    auto& s = slots_[handle];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard op_lock(slot->op_mu);
  if (slot->group && !slot->group->broken()) {
    if ((rank >= 0 && rank != slot->group->rank()) || (world_size >= 0 && world_size != slot->group->world_size())) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT,
                        "this handle's group is rank " + std::to_string(slot->group->rank()) + " of " +
                            std::to_string(slot->group->world_size()) + ", not rank " + std::to_string(rank) +
                            " of " + std::to_string(world_size));
    }
    return op(*slot->group);
  }
  auto config = collectives::group_config_from(rank, world_size, [](const char* n) { return std::getenv(n); });
  if (!config) return config.error();
  if (slot->group) ++slot->generation;  // the last one broke
  config->prefix += "/" + std::to_string(slot->generation);
  slot->group.reset();
  auto group = collectives::ProcessGroup::connect(*config);
  if (!group) {
    ++slot->generation;  // a failed rendezvous leaves keys behind too
    return group.error();
  }
  slot->group = std::move(*group);
  return op(*slot->group);
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
