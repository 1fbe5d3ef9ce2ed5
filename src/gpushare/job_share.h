/* SPDX-License-Identifier: Apache-2.0 */
// The interposer's side of the GPU share file (share_file.h): this process's
// slot in the job's shared books, and the memory cap checked against what
// every live process of the job holds.
//
// Without a share file (the interposer preloaded by hand, with only
// MLOS_GPU_MEMORY_LIMIT / MLOS_GPU_SHARE set) the books live in this
// process's own memory: the cap then holds per process, not per job.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpushare/share_file.h"

namespace mlos::gpushare {

class JobShare {
 public:
  // Maps `path` read-write and takes a slot for this process; with `path`
  // empty, private books holding `fallback`. nullptr with `*why` when the
  // file cannot be used: missing, not this user's own
  // (untrusted_share_file_reason: checked on the open descriptor before
  // anything in the file is read), another format, every slot taken by a
  // live process.
  static std::unique_ptr<JobShare> attach(const std::string& path, const ShareLimits& fallback, std::string* why);
  ~JobShare();  // frees this process's slot
  JobShare(const JobShare&) = delete;
  JobShare& operator=(const JobShare&) = delete;

  ShareLimits limits() const;
  // The device entry for `uuid`, added if new; -1 when the table is full
  // (then nothing is capped on that device, and why() says so).
  int device(const std::string& uuid);
  // Adds `bytes` to this process's use of `device` unless the job's use
  // (every live process) would pass the cap; false, counted as refused,
  // if it would. Always true without a cap or for device -1.
  bool reserve(int device, uint64_t bytes);
  void release(int device, uint64_t bytes);
  // What the job's live processes hold on `device`.
  uint64_t job_used(int device);
  // The pids of the job's live processes (for the utilization figures).
  std::vector<int> job_pids();
  void count_launch();
  void add_throttled_ns(uint64_t ns);
  void set_mechanism(const std::string& mechanism, const std::string& utilization_source);
  // In a child after fork(): the slot is the parent's. The child takes one
  // of its own on its first allocation or launch, so forked workers that
  // never use CUDA (a DataLoader's) hold none.
  void reattach_after_fork();
  const std::string& why() const { return why_; }

 private:
  JobShare() = default;
  bool take_slot(std::string* why);
  // Takes the slot a forked child put off; false when it has none.
  bool ensure_slot();
  void lock();
  void unlock();
  // Frees the slots of processes that have exited (they cannot free their
  // own after kill -9). Called with the lock held.
  void reclaim_dead_slots();

  ShareFileLayout* map_ = nullptr;
  bool file_backed_ = false;
  int slot_ = -1;
  bool slot_wanted_ = false;
  std::string why_;
};

// Field 22 of /proc/<pid>/stat (start time in clock ticks); 0 if unreadable.
uint64_t process_start_time(int pid);
// Whether `pid` runs and started at `start_time` (0 accepts any start).
bool process_alive(int pid, uint64_t start_time);

}  // namespace mlos::gpushare
