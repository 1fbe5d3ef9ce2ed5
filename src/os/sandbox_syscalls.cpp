// SPDX-License-Identifier: Apache-2.0
// Step 2 of the sandbox (lock_down_syscalls): the system calls the policy
// host may still make once the plug-in is loaded, as one reviewed table.
// What the host needs: its one socket to the parent, poll, clocks and
// sleeping, futex for threads started earlier, malloc, signal return, its
// own ids, exit. Everything else kills the process (SIGSYS): open, execve,
// socket/connect, ptrace, kill, clone/fork (no new processes and no new
// threads: filtering clone's flags differs by architecture, and clone3's
// flags live in memory a filter cannot read).
#include <seccomp.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <iterator>
#include <vector>

#include <cerrno>
#include <memory>

#include "os/sandbox.h"

namespace mlos::os {
namespace {

struct AllowedCall {
  const char* name;
  bool without_exec = false;  // allowed only when PROT_EXEC (argument 2) is clear
  bool read_only = false;     // openat: only when no write or create flag (argument 2) is set
};

// clang-format off
constexpr AllowedCall kAllowed[] = {
    // The socket to the parent. send()/recv() are sendto/recvfrom underneath
    // (an address on a connected Unix stream socket is refused by the
    // kernel). close lets descriptors received with SCM_RIGHTS go; closing
    // only takes access away.
    {"read"}, {"write"}, {"readv"}, {"writev"},
    {"recvmsg"}, {"sendmsg"}, {"recvfrom"}, {"sendto"}, {"close"},
    // Waiting on it. poll() is ppoll on architectures without poll.
    {"poll"}, {"ppoll"},
    // Clocks and sleeping: clock_gettime where the vDSO cannot answer.
    {"clock_gettime"}, {"clock_nanosleep"}, {"nanosleep"}, {"sched_yield"},
    // Threads started before the lock-down: mutexes, condition variables, join.
    {"futex"},
    // malloc: the main heap (brk), large blocks and other arenas (mmap,
    // mremap, madvise; mprotect grows a thread arena). No executable
    // memory: the plug-in's code is loaded already.
    {"brk"}, {"mmap", true}, {"mprotect", true}, {"munmap"}, {"mremap"}, {"madvise"},
    // Signals: returning from a handler (SIGXCPU), and the kernel's own
    // resumption of a sleep or poll that a handler interrupted.
    {"rt_sigreturn"}, {"restart_syscall"},
    // Its own ids (logging, futex owners).
    {"getpid"}, {"gettid"},
    // Leaving: a thread, the process.
    {"exit"}, {"exit_group"},
};

// The data-loading helper's additions: reading the job's files (images,
// shards) that it opens as it goes, never writing or creating one.
constexpr AllowedCall kLoaderExtra[] = {
    {"openat", false, true}, {"pread64"}, {"preadv2"}, {"lseek"}, {"fstat"}, {"newfstatat"}, {"statx"},
    {"fadvise64"},
    // Driving its io_uring ring, created before the lock-down and restricted
    // to IORING_OP_READ (dataload/uring_reads.h); no new ring, no
    // registration.
    {"io_uring_enter"},
};
// clang-format on

std::vector<AllowedCall> allowed_calls(SyscallProfile profile) {
  std::vector<AllowedCall> calls(std::begin(kAllowed), std::end(kAllowed));
  if (profile == SyscallProfile::kDataLoader) calls.insert(calls.end(), std::begin(kLoaderExtra), std::end(kLoaderExtra));
  return calls;
}

}  // namespace

std::vector<std::string> sandbox_allowed_syscalls(SyscallProfile profile) {
  std::vector<std::string> names;
  for (const AllowedCall& c : allowed_calls(profile)) names.emplace_back(c.name);
  return names;
}

Status lock_down_syscalls(SyscallProfile profile) {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_KILL_PROCESS), seccomp_release);
  if (!ctx) return make_error(MLOS_ERR_SYSTEM, "seccomp_init failed");
  // Every thread gets the filter (and no-new-privileges), not only the caller.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc != 0) {
    return make_sys_error(-rc, "seccomp: thread synchronisation (TSYNC)", MLOS_ERR_UNSUPPORTED);
  }
  constexpr uint64_t kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
  for (const AllowedCall& c : allowed_calls(profile)) {
    int nr = seccomp_syscall_resolve_name(c.name);
    if (nr == __NR_SCMP_ERROR)
      return make_error(MLOS_ERR_UNSUPPORTED, std::string("seccomp: unknown system call ") + c.name);
    int rc = c.without_exec ? seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0))
             : c.read_only  ? seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, kWriteFlags, 0))
                            : seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0);
    if (rc != 0) return make_sys_error(-rc, std::string("seccomp: allowing ") + c.name);
  }
  // All or nothing: a failed load installs no filter.
  if (int rc = seccomp_load(ctx.get()); rc != 0) return make_sys_error(-rc, "seccomp: loading the filter");
  return Status::Ok();
}

}  // namespace mlos::os
