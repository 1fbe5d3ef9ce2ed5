#include "api/handle_registry.h"

#include <mutex>

namespace mlos {

namespace {
// Handles look like pointers to nothing mappable: a tag in the high bits
// plus a counter, so they are never NULL and never collide with each other.
constexpr uintptr_t kHandleTag = uintptr_t{0x6d6c} << 48;
}  // namespace

HandleRegistry& HandleRegistry::instance() {
  // Leaked on purpose: handles may be released from atexit handlers or
  // other static destructors.
  static auto* r = new HandleRegistry;
  return *r;
}

mlos_training_resources_t* HandleRegistry::add(std::shared_ptr<Job> job) {
  std::unique_lock lock(mu_);
  uintptr_t key = kHandleTag | next_++;
  jobs_.emplace(key, std::move(job));
  return reinterpret_cast<mlos_training_resources_t*>(key);
}

std::shared_ptr<Job> HandleRegistry::find(const mlos_training_resources_t* handle) const {
  std::shared_lock lock(mu_);
  auto it = jobs_.find(reinterpret_cast<uintptr_t>(handle));
  return it == jobs_.end() ? nullptr : it->second;
}

std::shared_ptr<Job> HandleRegistry::take(mlos_training_resources_t* handle) {
  std::unique_lock lock(mu_);
  auto it = jobs_.find(reinterpret_cast<uintptr_t>(handle));
  if (it == jobs_.end()) return nullptr;
  auto job = std::move(it->second);
  jobs_.erase(it);
  return job;
}

}  // namespace mlos
