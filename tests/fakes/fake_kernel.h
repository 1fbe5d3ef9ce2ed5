/* SPDX-License-Identifier: Apache-2.0 */
// An os::Kernel that records every call and keeps thread state in memory,
// with switches to make calls fail; for engine tests that must count system
// calls or exercise failures the real kernel will not produce on demand.
#pragma once

#include <linux/mempolicy.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "os/kernel.h"

namespace mlos_test {

class FakeKernel final : public mlos::os::Kernel {
 public:
  struct Thread {
    mlos::CpuSet affinity = mlos::CpuSet::range(0, 63);
    int nice = 0;
    mlos::IoPriority io;
  };

  std::map<pid_t, Thread> threads;
  std::vector<std::string> calls;  // mutating calls, in order: "set_nice 7 -5"
  mlos::os::MemoryPolicy policy;
  int lowest_nice = -20;
  bool fail_set_nice = false;   // EPERM
  bool fail_set_affinity = false;  // EINVAL (e.g. the cpuset shrank)
  bool fail_lock = false;       // RLIMIT_MEMLOCK
  pid_t self_tid = 1000;
  // What process_threads() lists (empty: a process with no thread besides
  // those a test binds, so no thread follows phases unbound) and names.
  std::vector<pid_t> process_tids;
  std::map<pid_t, std::string> names;
  size_t thread_scans = 0;
  std::map<void*, size_t> mapped;
  std::set<void*> unlocked_mappings;  // of mapped: from map_prefaulted
  size_t locked_bytes = 0;

  mlos::Result<mlos::CpuSet> affinity(pid_t tid) override {
    if (!threads.count(tid)) return gone(tid);
    return threads[tid].affinity;
  }
  mlos::Status set_affinity(pid_t tid, const mlos::CpuSet& cpus) override {
    if (!threads.count(tid)) return gone(tid);
    calls.push_back("set_affinity " + std::to_string(tid) + " " + cpus.to_list());
    if (fail_set_affinity) return mlos::make_sys_error(EINVAL, "sched_setaffinity");
    threads[tid].affinity = cpus;
    return {};
  }
  mlos::Result<int> nice(pid_t tid) override {
    if (!threads.count(tid)) return gone(tid);
    return threads[tid].nice;
  }
  mlos::Status set_nice(pid_t tid, int n) override {
    calls.push_back("set_nice " + std::to_string(tid) + " " + std::to_string(n));
    if (!threads.count(tid)) return gone(tid);
    if (fail_set_nice) return mlos::make_sys_error(EPERM, "setpriority", MLOS_ERR_PERMISSION);
    threads[tid].nice = n;
    return {};
  }
  mlos::Result<mlos::IoPriority> io_priority(pid_t tid) override {
    if (!threads.count(tid)) return gone(tid);
    return threads[tid].io;
  }
  mlos::Status set_io_priority(pid_t tid, mlos::IoPriority p) override {
    calls.push_back("set_io " + std::to_string(tid) + " " + std::to_string(p.io_class) + "/" +
                    std::to_string(p.level));
    if (!threads.count(tid)) return gone(tid);
    threads[tid].io = p;
    return {};
  }
  mlos::Result<std::vector<pid_t>> process_threads() override {
    ++thread_scans;
    return process_tids;
  }
  std::string thread_name(pid_t tid) override { return names.count(tid) ? names[tid] : "worker"; }
  mlos::Result<mlos::os::MemoryPolicy> memory_policy() override { return policy; }
  mlos::Status set_memory_policy(const mlos::os::MemoryPolicy& p) override {
    calls.push_back("set_mempolicy " + std::to_string(p.mode) + " " + p.nodes.to_list());
    policy = p;
    return {};
  }
  mlos::Result<void*> map_locked(size_t bytes) override {
    if (fail_lock) return mlos::make_sys_error(ENOMEM, "mlock (RLIMIT_MEMLOCK)", MLOS_ERR_LOCK_LIMIT);
    void* p = std::malloc(bytes);
    mapped[p] = bytes;
    locked_bytes += bytes;
    return p;
  }
  mlos::Result<void*> map_prefaulted(size_t bytes) override {
    void* p = std::malloc(bytes);
    mapped[p] = bytes;
    unlocked_mappings.insert(p);
    return p;
  }
  mlos::Status unmap(void* addr, size_t bytes) override {
    if (unlocked_mappings.erase(addr) == 0) locked_bytes -= bytes;
    mapped.erase(addr);
    std::free(addr);
    return {};
  }
  mlos::Status lock(void*, size_t bytes) override {
    calls.push_back("lock " + std::to_string(bytes));
    if (fail_lock) return mlos::make_sys_error(ENOMEM, "mlock (RLIMIT_MEMLOCK)", MLOS_ERR_LOCK_LIMIT);
    locked_bytes += bytes;
    return {};
  }
  mlos::Status unlock(void*, size_t bytes) override {
    calls.push_back("unlock " + std::to_string(bytes));
    locked_bytes -= bytes;
    return {};
  }
  int lowest_permitted_nice() override { return lowest_nice; }
  pid_t current_tid() override { return self_tid; }
  size_t page_size() override { return 4096; }

 private:
  static mlos::Error gone(pid_t tid) {
    return mlos::make_error(MLOS_ERR_NO_SUCH_THREAD, "no thread " + std::to_string(tid));
  }
};

}  // namespace mlos_test
