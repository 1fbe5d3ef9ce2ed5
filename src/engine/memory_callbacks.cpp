// SPDX-License-Identifier: Apache-2.0
#include "engine/memory_callbacks.h"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace mlos {

std::list<MemoryCallbacks::Entry>::iterator MemoryCallbacks::find(mlos_memory_callback_t cb, void* user_data) {
  return std::find_if(entries_.begin(), entries_.end(),
                      [&](const Entry& e) { return e.cb == cb && e.user_data == user_data; });
}

Status MemoryCallbacks::add(mlos_memory_callback_t cb, void* user_data) {
  if (!cb) return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory callback is NULL");
  std::lock_guard lock(mu_);
  if (find(cb, user_data) != entries_.end()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "this callback is already registered with this user_data");
  }
  if (entries_.size() >= kMaxCallbacks) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "a job takes at most " + std::to_string(kMaxCallbacks) + " memory callbacks");
  }
  entries_.push_back(Entry{next_id_++, cb, user_data, MLOS_MEMORY_PRESSURE_NORMAL});
  return Status::Ok();
}

void MemoryCallbacks::wait_not_running(std::unique_lock<std::mutex>& lock, uint64_t id) {
  // A callback removing itself (or another) from inside a call cannot wait
  // for the watcher thread, which is itself.
  if (runner_ == std::this_thread::get_id()) return;
  idle_.wait(lock, [&] { return running_ != id; });
}

Status MemoryCallbacks::remove(mlos_memory_callback_t cb, void* user_data) {
  std::unique_lock lock(mu_);
  auto it = find(cb, user_data);
  if (it == entries_.end()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "this callback is not registered with this user_data");
  }
  const uint64_t id = it->id;
  entries_.erase(it);
  wait_not_running(lock, id);
  return Status::Ok();
}

void MemoryCallbacks::clear() {
  std::unique_lock lock(mu_);
  entries_.clear();
  if (running_ != 0) wait_not_running(lock, running_);
}

size_t MemoryCallbacks::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

bool MemoryCallbacks::behind(mlos_memory_pressure_level_t level) const {
  std::lock_guard lock(mu_);
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.told != level; });
}

void MemoryCallbacks::deliver(const PressureReport& r) {
  mlos_memory_pressure_info_t info{};
  info.struct_size = sizeof info;
  fill_pressure_info(r, &info);
  std::unique_lock lock(mu_);
  for (uint64_t after = 0;;) {
    // The next entry (in registration order) not yet told this level; the
    // list may change while a callback runs, so search again each time.
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.id > after && e.told != r.level; });
    if (it == entries_.end()) return;
    const Entry e = *it;
    after = e.id;
    running_ = e.id;
    runner_ = std::this_thread::get_id();
    lock.unlock();
    const uint64_t start = clock_();
    std::string problem;
    try {
      e.cb(r.level, &info, e.user_data);
    } catch (const std::exception& ex) {
      problem = std::string("threw: ") + ex.what();
    } catch (...) {
      problem = "threw a non-standard exception";
    }
    const uint64_t took = clock_() - start;
    lock.lock();
    running_ = 0;
    runner_ = std::thread::id();
    idle_.notify_all();
    ++stats_.calls;
    stats_.slowest_ns = std::max(stats_.slowest_ns, took);
    if (!problem.empty()) ++stats_.exceptions;
    if (took > slow_ns_) {
      ++stats_.slow_calls;
      problem += std::string(problem.empty() ? "" : "; ") + "took " + std::to_string(took / 1000000) +
                 " ms (level changes meanwhile were coalesced)";
    }
    if (!problem.empty()) {
      char addr[32];
      std::snprintf(addr, sizeof addr, "%p", reinterpret_cast<void*>(e.cb));
      last_problem_ = std::string("memory callback ") + addr + " " + problem;
    }
    auto still = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.id == e.id; });
    if (still != entries_.end()) still->told = r.level;
  }
}

MemoryCallbacks::Stats MemoryCallbacks::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::string MemoryCallbacks::notes() const {
  std::lock_guard lock(mu_);
  if (last_problem_.empty()) return "";
  return last_problem_ + " (" + std::to_string(stats_.slow_calls) + " slow, " + std::to_string(stats_.exceptions) +
         " exceptions in " + std::to_string(stats_.calls) + " calls)";
}

}  // namespace mlos
