/* SPDX-License-Identifier: Apache-2.0 */
// Every kernel call the engine makes on threads and memory, behind one
// interface (like leveldb's Env), so unit tests can substitute a fake that
// records calls and injects failures. LinuxKernel is the real thing.
//
// Error mapping (Error::code): EPERM/EACCES -> MLOS_ERR_PERMISSION,
// ESRCH -> MLOS_ERR_NO_SUCH_THREAD, mlock's EPERM/ENOMEM -> MLOS_ERR_LOCK_LIMIT,
// anything else -> MLOS_ERR_SYSTEM; Error::sys_errno keeps the errno.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/cpu_set.h"
#include "core/phase_policy.h"
#include "core/status.h"
#include "mlos/training.h"

namespace mlos::os {

// A NUMA memory policy as set_mempolicy(2) takes it (mode is the kernel's
// MPOL_* value; nodes empty for MPOL_DEFAULT).
struct MemoryPolicy {
  int mode = 0;
  CpuSet nodes;
  bool operator==(const MemoryPolicy&) const = default;
};

// The set_mempolicy(2) form of a placement's memory policy over `nodes`.
MemoryPolicy memory_policy_for(mlos_memory_policy_t policy, const std::vector<int>& nodes);

class Kernel {
 public:
  virtual ~Kernel() = default;

  // Thread knobs; `tid` is a kernel thread id of any thread the caller may
  // act on (for libmlos: threads of its own process).
  virtual Result<CpuSet> affinity(pid_t tid) = 0;
  virtual Status set_affinity(pid_t tid, const CpuSet& cpus) = 0;
  virtual Result<int> nice(pid_t tid) = 0;
  virtual Status set_nice(pid_t tid, int nice) = 0;
  virtual Result<IoPriority> io_priority(pid_t tid) = 0;
  virtual Status set_io_priority(pid_t tid, IoPriority prio) = 0;

  // The kernel thread ids of this process's threads (/proc/self/task), in
  // no particular order, and a thread's name (its comm; "" if it exited).
  virtual Result<std::vector<pid_t>> process_threads() = 0;
  virtual std::string thread_name(pid_t tid) = 0;

  // The calling thread's memory policy: Linux has no call for another's.
  virtual Result<MemoryPolicy> memory_policy() = 0;
  virtual Status set_memory_policy(const MemoryPolicy& policy) = 0;

  // Anonymous private mapping, prefaulted and locked (MAP_POPULATE + mlock).
  // On a lock failure the mapping is undone and LOCK_LIMIT returned.
  virtual Result<void*> map_locked(size_t bytes) = 0;
  // The same, prefaulted but not locked (what a caller falls back to when
  // it may do without the lock).
  virtual Result<void*> map_prefaulted(size_t bytes) = 0;
  virtual Status unmap(void* addr, size_t bytes) = 0;
  virtual Status lock(void* addr, size_t bytes) = 0;
  virtual Status unlock(void* addr, size_t bytes) = 0;

  // The lowest nice value this process may set on its threads: -20 with
  // CAP_SYS_NICE, else 20 - RLIMIT_NICE (so 20, "cannot lower at all", with
  // the default limit of 0).
  virtual int lowest_permitted_nice() = 0;

  virtual pid_t current_tid() = 0;
  virtual size_t page_size() = 0;
};

// The process-wide real implementation.
Kernel& linux_kernel();

}  // namespace mlos::os
