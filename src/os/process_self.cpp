// SPDX-License-Identifier: Apache-2.0
#include "os/process_self.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace mlos::os {

namespace {
std::atomic<pid_t> g_pid{0};
void refresh_after_fork() { g_pid.store(getpid(), std::memory_order_relaxed); }
}  // namespace

pid_t self_pid() {
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid != 0) return pid;
  static const bool registered = [] { return pthread_atfork(nullptr, nullptr, refresh_after_fork) == 0; }();
  pid = getpid();
  // Without the fork hook the cache could go stale: keep asking the kernel.
  if (registered) g_pid.store(pid, std::memory_order_relaxed);
  return pid;
}

}  // namespace mlos::os
