/* SPDX-License-Identifier: Apache-2.0 */
// Maps opaque C handles to the objects behind them. A handle is a tag in
// the high bits plus a counter: never NULL, never reused within a process,
// and pointing at nothing mappable, so a released or made-up handle is
// recognised and rejected instead of being dereferenced.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace mlos {

// `Handle` is the C API's incomplete handle type; `kTag` (16 bits) tells the
// kinds of handles apart.
template <class Object, class Handle, uint16_t kTag>
class HandleTable {
 public:
  Handle* add(std::shared_ptr<Object> object) {
    std::unique_lock lock(mu_);
    const uintptr_t key = (uintptr_t{kTag} << 48) | next_++;
    objects_.emplace(key, std::move(object));
    return reinterpret_cast<Handle*>(key);
  }
  // nullptr if unknown.
  std::shared_ptr<Object> find(const Handle* handle) const {
    std::shared_lock lock(mu_);
    auto it = objects_.find(reinterpret_cast<uintptr_t>(handle));
    return it == objects_.end() ? nullptr : it->second;
  }
  // Removes and returns the object; nullptr if unknown (already taken).
  std::shared_ptr<Object> take(Handle* handle) {
    std::unique_lock lock(mu_);
    auto it = objects_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == objects_.end()) return nullptr;
    auto object = std::move(it->second);
    objects_.erase(it);
    return object;
  }

 private:
  mutable std::shared_mutex mu_;
  uint64_t next_ = 1;
  std::unordered_map<uintptr_t, std::shared_ptr<Object>> objects_;
};

}  // namespace mlos
