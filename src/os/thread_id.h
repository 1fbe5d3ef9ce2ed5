/* SPDX-License-Identifier: Apache-2.0 */
// Kernel thread id of a pthread_t of this process.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include "core/status.h"

namespace mlos::os {

// The tid behind `thread`, which may be anything a caller passed: a live
// thread, one already joined, a made-up number or a pointer to garbage.
// `thread` is never dereferenced. glibc before 2.42 has no
// pthread_gettid_np, and its pthread_getcpuclockid reads the descriptor
// directly (a segfault for a made-up value), so the tid field of the thread
// descriptor is read with process_vm_readv, which fails with EFAULT on
// unmapped memory instead of faulting. The field's offset is the one glibc
// publishes for debuggers (_thread_db_pthread_tid), confirmed on the calling
// thread's own descriptor; on x86 the descriptor must also point to itself
// (the TLS ABI's TCB self pointer), and the tid must be a live thread in
// /proc/self/task.
// Errors: NO_SUCH_THREAD (not a live thread of this process), UNSUPPORTED
// (the descriptor layout cannot be confirmed, or process_vm_readv is
// refused, e.g. by seccomp). The calling thread always resolves.
Result<pid_t> thread_tid(pthread_t thread);

}  // namespace mlos::os
