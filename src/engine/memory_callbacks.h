/* SPDX-License-Identifier: Apache-2.0 */
// The memory-pressure callbacks registered on one job, and how a report is
// delivered to them.
//
// Contract (docs/memory-pressure.md):
//  - at most kMaxCallbacks per job; a (callback, user_data) pair at most once;
//  - each callback learns every level its job enters, in registration order,
//    on the watcher thread; one registered while the level is not NORMAL is
//    told the current level at once;
//  - callbacks run one at a time; changes that happen while one runs are
//    coalesced: the next call carries the latest level, so an intermediate
//    level may be skipped but the latest one never is;
//  - a call slower than `slow_ns` is counted and noted; a C++ exception
//    escaping a callback is caught, counted and noted;
//  - remove() returns only once the callback is not running and will not
//    run again, except when called from inside a callback (it cannot wait
//    for itself): then the current call finishes and there is no other.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "engine/pressure_feed.h"
#include "mlos/training.h"

namespace mlos {

class MemoryCallbacks {
 public:
  static constexpr size_t kMaxCallbacks = MLOS_MAX_MEMORY_CALLBACKS;
  using Clock = std::function<uint64_t()>;

  MemoryCallbacks(Clock clock, uint64_t slow_ns) : clock_(std::move(clock)), slow_ns_(slow_ns) {}

  // INVALID_ARGUMENT: NULL callback, already registered, or kMaxCallbacks
  // registered.
  Status add(mlos_memory_callback_t cb, void* user_data);
  // INVALID_ARGUMENT if not registered.
  Status remove(mlos_memory_callback_t cb, void* user_data);
  // Removes every callback (waiting as remove() does).
  void clear();
  size_t size() const;

  // Calls each callback whose last delivered level differs from r.level.
  // Returns once all are up to date with `r` (or removed).
  void deliver(const PressureReport& r);
  // true if some callback has not been told r.level yet.
  bool behind(mlos_memory_pressure_level_t level) const;

  struct Stats {
    uint64_t calls = 0;
    uint64_t slow_calls = 0;
    uint64_t exceptions = 0;
    uint64_t slowest_ns = 0;
  };
  Stats stats() const;
  // "" or one line describing slow or throwing callbacks.
  std::string notes() const;

 private:
  struct Entry {
    uint64_t id;
    mlos_memory_callback_t cb;
    void* user_data;
    mlos_memory_pressure_level_t told;
  };
  std::list<Entry>::iterator find(mlos_memory_callback_t cb, void* user_data);
  void wait_not_running(std::unique_lock<std::mutex>& lock, uint64_t id);

  Clock clock_;
  const uint64_t slow_ns_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::list<Entry> entries_;
  uint64_t next_id_ = 1;
  uint64_t running_ = 0;  // id of the entry being called, 0 = none
  std::thread::id runner_;
  Stats stats_;
  std::string last_problem_;
};

}  // namespace mlos
