// SPDX-License-Identifier: Apache-2.0
#include "collectives/callback_store.h"

#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace mlos::collectives {

namespace {

void check(int rc, const char* what, const std::string& key) {
  if (rc == MLOS_OK) return;
  if (rc == MLOS_ERR_TIMEOUT) throw std::runtime_error(std::string("store ") + what + " of " + key + " timed out");
  throw std::runtime_error(std::string("store ") + what + " of " + key + " failed: " + mlos_strerror(rc));
}

}  // namespace

CallbackStore::~CallbackStore() {
  if (c_.release) c_.release(c_.user_data);
}

void CallbackStore::set(const std::string& key, const std::vector<char>& data) {
  check(c_.set(c_.user_data, key.c_str(), data.data(), data.size()), "set", key);
}

namespace {

// A callback's malloc()ed value as bytes (freed here), after checking rc.
std::vector<char> take_value(int rc, void* raw, size_t size, const char* what, const std::string& key) {
  std::unique_ptr<void, decltype(&std::free)> value(raw, &std::free);
  check(rc, what, key);
  if (size > 0 && !value) throw std::runtime_error(std::string("store ") + what + " of " + key + " returned no buffer");
  const char* bytes = static_cast<const char*>(value.get());
  return std::vector<char>(bytes, bytes + size);
}

}  // namespace

std::vector<char> CallbackStore::get(const std::string& key) {
  void* raw = nullptr;
  size_t size = 0;
  const int rc = c_.get(c_.user_data, key.c_str(), &raw, &size, kDefaultTimeout.count());
  return take_value(rc, raw, size, "get", key);
}

std::optional<std::vector<char>> CallbackStore::compare_set(const std::string& key, const std::vector<char>& expected,
                                                            const std::vector<char>& desired) {
  if (!c_.compare_set) return std::nullopt;
  void* raw = nullptr;
  size_t size = 0;
  const int rc = c_.compare_set(c_.user_data, key.c_str(), expected.data(), expected.size(), desired.data(),
                                desired.size(), &raw, &size);
  return take_value(rc, raw, size, "compare_set", key);
}

void CallbackStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::vector<const char*> names;
  names.reserve(keys.size());
  for (const auto& k : keys) names.push_back(k.c_str());
  check(c_.wait(c_.user_data, names.data(), names.size(), timeout.count()), "wait", keys.empty() ? "" : keys[0]);
}

}  // namespace mlos::collectives
