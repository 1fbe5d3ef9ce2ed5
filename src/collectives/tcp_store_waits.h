/* SPDX-License-Identifier: Apache-2.0 */
// Who waits for which keys in the TCPStore server (WAIT, BARRIER, a queue's
// pop): every operation costs time linear in the keys it names, never in
// the keys or waiters already recorded. A WAIT of 131,072 keys is 131,072
// steps to record, one step per key to wake and one per key to cancel.
// Belongs to the server's thread (no locking).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlos::collectives {

class TcpStoreWaits {
 public:
  // Records that connection `id` waits for `key`; false (nothing recorded)
  // when it already does. `bytes_held()` grows by the entry's cost.
  bool add(uint64_t id, const std::string& key);
  // How many keys `id` still waits for.
  size_t waiting(uint64_t id) const;
  // `key` is set: every connection waiting for it stops waiting for it.
  // Returns those whose wait is now over, in the order they began waiting.
  std::vector<uint64_t> wake_all(const std::string& key);
  // One item arrived on queue `key`: the first connection waiting for it
  // stops waiting for it. Returns it when its wait is now over; 0 when
  // nobody waited or it still waits for other keys.
  uint64_t wake_first(const std::string& key);
  // `id` cancels its wait or is gone: it waits for nothing.
  void forget(uint64_t id);

  // What recording one key costs in bytes_held().
  static size_t cost(const std::string& key);
  // Memory the records take (keys and nodes, estimated), for the server's
  // memory bound.
  size_t bytes_held() const { return bytes_; }
  // Steps taken since construction: one per key recorded, woken or
  // forgotten. Tests count these to prove the cost is linear.
  uint64_t steps() const { return steps_; }

 private:
  using Queue = std::list<uint64_t>;  // connection ids, in the order they began waiting
  struct Waiter {
    std::unordered_map<std::string, Queue::iterator> keys;  // each key's place in that key's queue
  };
  void erase_key(uint64_t id, const std::string& key);

  std::unordered_map<std::string, Queue> by_key_;
  std::unordered_map<uint64_t, Waiter> by_conn_;
  size_t bytes_ = 0;
  uint64_t steps_ = 0;
};

}  // namespace mlos::collectives
