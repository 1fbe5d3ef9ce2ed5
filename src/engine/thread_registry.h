/* SPDX-License-Identifier: Apache-2.0 */
// Which job each bound thread belongs to, and what the thread had before
// any job touched it. A thread belongs to at most one job at a time:
// binding it through another handle moves it there, and the move keeps the
// baseline, so whichever release comes last restores what the thread had
// before mlOS, whatever the order of releases.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "core/cpu_set.h"
#include "core/phase_policy.h"
#include "os/kernel.h"

namespace mlos {

struct ThreadBaseline {
  CpuSet affinity;
  int nice = 0;
  IoPriority io;
  std::optional<os::MemoryPolicy> memory_policy;  // only if a job changed it
};

class ThreadRegistry {
 public:
  // The registry of this process's real threads.
  static ThreadRegistry& process_wide();

  // The recorded baseline of `tid`, if some job binds it.
  std::optional<ThreadBaseline> baseline(pid_t tid) const;
  // Makes job `owner` the owner of `tid`; `baseline` is recorded only if no
  // job bound the thread before (else the recorded one is kept).
  void adopt(pid_t tid, uint64_t owner, const ThreadBaseline& baseline);
  // Makes `owner` the owner of `tid` only if no job has it; false if one does.
  bool adopt_if_free(pid_t tid, uint64_t owner, const ThreadBaseline& baseline);
  // Records the thread's memory policy before a job first changes it.
  void record_memory_policy(pid_t tid, const os::MemoryPolicy& policy);
  bool owns(pid_t tid, uint64_t owner) const;
  // If `owner` owns `tid`: forgets the thread and returns its baseline.
  std::optional<ThreadBaseline> release(pid_t tid, uint64_t owner);

 private:
  struct Entry {
    uint64_t owner;
    ThreadBaseline baseline;
  };
  mutable std::mutex mu_;
  std::map<pid_t, Entry> threads_;
};

}  // namespace mlos
