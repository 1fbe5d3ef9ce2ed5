// Kernel thread id of a pthread_t of this process.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include "core/status.h"

namespace mlos::os {

// glibc before 2.42 has no pthread_gettid_np. The kernel's CPU-time clock id
// for a thread encodes its tid ((~tid << 3) | CPUCLOCK_SCHED | PERTHREAD, a
// stable kernel ABI that glibc's pthread_getcpuclockid builds), so the tid is
// recovered from it and then checked to exist in /proc/self/task.
// NO_SUCH_THREAD if the thread has exited or is not ours.
Result<pid_t> thread_tid(pthread_t thread);

}  // namespace mlos::os
