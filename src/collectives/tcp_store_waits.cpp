// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store_waits.h"

namespace mlos::collectives {

// The key twice (the queue's map and the waiter's), two hash nodes and a
// list node: an estimate, close enough for a bound of hundreds of MiB.
size_t TcpStoreWaits::cost(const std::string& key) { return 2 * key.size() + 160; }

bool TcpStoreWaits::add(uint64_t id, const std::string& key) {
  ++steps_;
  Waiter& w = by_conn_[id];
  if (w.keys.count(key) != 0) return false;
  Queue& q = by_key_[key];
  w.keys.emplace(key, q.insert(q.end(), id));
  bytes_ += cost(key);
  return true;
}

size_t TcpStoreWaits::waiting(uint64_t id) const {
  auto it = by_conn_.find(id);
  return it == by_conn_.end() ? 0 : it->second.keys.size();
}

// Drops `key` from waiter `id`'s record (its queue entry is the caller's).
void TcpStoreWaits::erase_key(uint64_t id, const std::string& key) {
  ++steps_;
  auto w = by_conn_.find(id);
  if (w == by_conn_.end()) return;
  if (w->second.keys.erase(key) != 0) bytes_ -= cost(key);
  if (w->second.keys.empty()) by_conn_.erase(w);
}

std::vector<uint64_t> TcpStoreWaits::wake_all(const std::string& key) {
  std::vector<uint64_t> done;
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return done;
  const Queue q = std::move(it->second);
  by_key_.erase(it);
  for (uint64_t id : q) {
    erase_key(id, key);
    if (waiting(id) == 0) done.push_back(id);
  }
  return done;
}

uint64_t TcpStoreWaits::wake_first(const std::string& key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return 0;
  const uint64_t id = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) by_key_.erase(it);
  erase_key(id, key);
  return waiting(id) == 0 ? id : 0;
}

void TcpStoreWaits::forget(uint64_t id) {
  auto w = by_conn_.find(id);
  if (w == by_conn_.end()) return;
  for (const auto& [key, place] : w->second.keys) {
    ++steps_;
    auto q = by_key_.find(key);
    q->second.erase(place);
    if (q->second.empty()) by_key_.erase(q);
    bytes_ -= cost(key);
  }
  by_conn_.erase(w);
}

}  // namespace mlos::collectives
