// SPDX-License-Identifier: Apache-2.0
#include "os/thread_id.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace mlos::os {

namespace {

pid_t own_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Copies `len` bytes at `addr` of this process into `out` without touching
// `addr` from user space: the kernel checks the range, so an unmapped or
// unreadable address is EFAULT, never a fault. Returns 0 or the errno.
int read_own_memory(uintptr_t addr, void* out, size_t len) {
  if (addr > UINTPTR_MAX - len) return EFAULT;
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  const ssize_t n = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
  if (n < 0) return errno;
  return static_cast<size_t>(n) == len ? 0 : EFAULT;
}

// Where the tid lives in a thread descriptor, or why that is unknown.
struct DescriptorLayout {
  size_t tid_offset = 0;
  std::string unknown;  // non-empty: the layout could not be confirmed
};

// glibc publishes the field for libthread_db as {bits, count, offset}
// (GLIBC_PRIVATE, but a debugger ABI it keeps); the offset is trusted only
// once the calling thread's own descriptor holds its tid there.
DescriptorLayout find_layout() {
  const auto* desc = static_cast<const uint32_t*>(dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid"));
  if (desc == nullptr) return {0, "the C library does not describe its thread descriptor (_thread_db_pthread_tid)"};
  if (desc[0] != 8 * sizeof(pid_t) || desc[1] != 1) return {0, "unexpected _thread_db_pthread_tid description"};
  pid_t seen = 0;
  const int err = read_own_memory(reinterpret_cast<uintptr_t>(pthread_self()) + desc[2], &seen, sizeof seen);
  if (err != 0) return {0, "process_vm_readv on this process failed: errno " + std::to_string(err)};
  if (seen != own_tid()) return {0, "the thread descriptor's tid field does not hold the calling thread's tid"};
  return {desc[2], ""};
}

Error no_such_thread(const std::string& why) { return make_error(MLOS_ERR_NO_SUCH_THREAD, why); }

}  // namespace

Result<pid_t> thread_tid(pthread_t thread) {
  if (pthread_equal(thread, pthread_self())) return own_tid();
  static const DescriptorLayout layout = find_layout();
  if (!layout.unknown.empty()) {
    return make_error(MLOS_ERR_UNSUPPORTED, "cannot map a pthread_t to a thread id: " + layout.unknown);
  }
  const auto base = reinterpret_cast<uintptr_t>(thread);
#if defined(__x86_64__) || defined(__i386__)
  // The x86 TLS ABI puts a pointer to the TCB (glibc's descriptor) in its
  // first word: a value that is not a descriptor fails here.
  uintptr_t self = 0;
  if (read_own_memory(base, &self, sizeof self) != 0 || self != base) {
    return no_such_thread("pthread_t " + std::to_string(base) + " is not a thread descriptor of this process");
  }
#endif
  pid_t tid = 0;
  if (int err = read_own_memory(base + layout.tid_offset, &tid, sizeof tid); err != 0) {
    if (err == EFAULT) return no_such_thread("pthread_t " + std::to_string(base) + " is not mapped memory");
    return make_sys_error(err, "process_vm_readv on this process", MLOS_ERR_UNSUPPORTED);
  }
  // glibc's descriptor holds 0 once the thread has exited (the kernel
  // clears it), which is what join waits for.
  struct stat st {};
  const std::string path = "/proc/self/task/" + std::to_string(tid);
  if (tid <= 0 || ::stat(path.c_str(), &st) != 0) {
    return no_such_thread("thread " + std::to_string(tid) + " is not a live thread of this process");
  }
  return tid;
}

}  // namespace mlos::os
