/* SPDX-License-Identifier: Apache-2.0 */
// Confinement of the current process before it runs untrusted plug-in code
// (the policy host, mlos-policyhost). Two steps, because loading the
// plug-in (dlopen) needs open and mmap of files while the system-call
// filter forbids them:
//
//   auto report = enter_sandbox(limits, {parent_socket});   // step 1
//   void* policy = dlopen(path, RTLD_NOW);                   // plug-in code
//   start the host's threads;
//   lock_down_syscalls();                                    // step 2
//
// dlopen runs the plug-in's constructors between the steps, so step 1 alone
// must hold against them: hard limits (not only soft ones), no root, no
// capabilities, no new privileges. Step 2 adds the filter.
//
// Failure: both steps check everything they can (users, limits, kept
// descriptors, threads) before they change anything; such an error leaves
// the process exactly as it was. A kernel call that fails once changes have
// begun returns an error whose message lists what was already done ("partly
// confined"). Either way the caller must not load or run plug-in code: it
// should report the error to its parent and exit.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace mlos::os {

struct SandboxLimits {
  // Each becomes both the soft and the hard limit (the plug-in may not raise
  // it back). enter_sandbox only lowers: a value above the current hard
  // limit is an error (PERMISSION) naming the limit, even for root.
  uint64_t address_space_bytes = 512ull << 20;  // RLIMIT_AS; 0: leave as is
  // RLIMIT_CPU: SIGXCPU at cpu_seconds, SIGKILL (the hard limit) one second
  // later. 0: leave as is.
  uint64_t cpu_seconds = 0;
  int max_open_files = 64;  // RLIMIT_NOFILE; 0: leave as is, < 0: INVALID_ARGUMENT
  // The process's nice value is raised to at least this (1..19; 0: leave as
  // is; anything else INVALID_ARGUMENT), and RLIMIT_NICE set to 0 so that
  // the plug-in cannot lower it again. While another task wants the CPU, a
  // task at nice 10 gets about a tenth of what one at nice 0 gets.
  int min_nice = 0;
  // Always applied: RLIMIT_CORE 0. Never: RLIMIT_NPROC. It counts every
  // process and thread of the real uid on the machine (nobody is shared
  // with other daemons), so its effect would depend on them, and a value
  // low enough to stop fork() would also stop the host's own threads. The
  // filter of step 2 is what forbids new processes.
};

struct SandboxReport {
  uid_t uid = 0;  // real = effective = saved, after step 1
  gid_t gid = 0;
  bool privileges_dropped = false;  // false: was not root, kept its uid
  SandboxLimits limits;             // as applied (0: left as it was)
  std::vector<int> kept_descriptors;
  std::vector<std::string> allowed_syscalls;  // what lock_down_syscalls() will allow
  std::vector<std::string> notes;             // human-readable, one decision each

  nlohmann::json to_json() const;
};

// Step 1. Needs a single-threaded process (INVALID_ARGUMENT otherwise): the
// no-new-privileges flag is per thread, and another thread could open
// descriptors while they are being closed.
//
// In order: closes every descriptor not in `keep` (close_range, or
// /proc/self/fd on kernels without it); sets the limits and RLIMIT_CORE 0;
// if the effective uid is 0, becomes `run_as` (default: the user "nobody"
// and its group from the password database) with no supplementary groups,
// then proves that setresuid(0) and setresgid(0) fail; sets
// PR_SET_NO_NEW_PRIVS; makes the process non-dumpable (no core dumps, and
// other processes of the same uid, such as anything else running as
// nobody, may not ptrace it or read its /proc/<pid>/mem, fd, environ; the
// parent, root or the same user, still reads /proc/<pid>/status and
// limits).
//
// If not root, the uid is kept (the report says so); a `run_as` other than
// the current uid is then PERMISSION. Either way the result must hold no
// uid 0 (real, effective or saved) and no permitted capability, else
// PERMISSION. A `run_as` uid or gid unknown to the password/group database,
// or uid/gid 0, is INVALID_ARGUMENT.
Result<SandboxReport> enter_sandbox(const SandboxLimits& limits, const std::vector<int>& keep,
                                    std::optional<std::pair<uid_t, gid_t>> run_as = std::nullopt);

// What a confined process may still do once locked down.
enum class SyscallProfile {
  kPolicyHost,  // its socket, clocks, threads started earlier, memory
  // The data-loading helper: the policy host's calls plus opening files
  // read-only (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND refused),
  // reading them (pread, lseek, fstat) and read-ahead advice.
  kDataLoader,
};

// Step 2. Installs a seccomp filter on every thread of the process (TSYNC)
// that kills the whole process (SIGSYS) on any system call outside
// sandbox_allowed_syscalls(profile). New processes and new threads are forbidden
// (clone, clone3, fork, vfork are not allowed): start threads before this.
// mmap and mprotect are allowed only without PROT_EXEC: no new code after
// the plug-in is loaded. Irreversible.
Status lock_down_syscalls(SyscallProfile profile = SyscallProfile::kPolicyHost);

// The names of the allowed system calls, in table order.
std::vector<std::string> sandbox_allowed_syscalls(SyscallProfile profile = SyscallProfile::kPolicyHost);

}  // namespace mlos::os
