/* SPDX-License-Identifier: Apache-2.0 */
// This process's PID without a system call on hot paths (glibc stopped
// caching getpid() in 2.25). The cache is refreshed in the child after
// fork() through pthread_atfork; a raw clone() that bypasses glibc would
// not refresh it.
#pragma once

#include <sys/types.h>

namespace mlos::os {

pid_t self_pid();

}  // namespace mlos::os
