/* SPDX-License-Identifier: Apache-2.0 */
// A process held by a pidfd: the kernel's reference to one process, which,
// unlike a pid number, never comes to name another process after the first
// one is reaped. mlosd identifies its clients and watches job owners through
// these (see docs/security.md).
#pragma once

#include <sys/types.h>

#include "core/claim_ledger.h"
#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::os {

class ProcessHandle {
 public:
  ProcessHandle() = default;

  // pidfd_open(pid). Only as good as the pid: the caller checks the
  // identity it expected (identity() against a recorded start time).
  static Result<ProcessHandle> open(pid_t pid);
  // The process at the other end of a connected Unix socket, as it was when
  // it connected: SO_PEERPIDFD (Linux 6.5), else pidfd_open of the
  // SO_PEERCRED pid (racy only if that process exited and its pid was
  // reused between connect and this call).
  static Result<ProcessHandle> socket_peer(int socket_fd);

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // True once the process has exited (a zombie included): the pidfd polls
  // readable then.
  bool exited() const;
  // The pid the process has now (from /proc/self/fdinfo); NO_SUCH_THREAD
  // once it has exited.
  Result<pid_t> pid() const;
  // pid and start time, read while the process provably held that pid (it
  // had not exited after the read). NO_SUCH_THREAD once exited.
  Result<ProcessId> identity() const;
  // Another pidfd for the same process.
  Result<ProcessHandle> duplicate() const;

 private:
  explicit ProcessHandle(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// Whether process `target`, which requester uid `requester` wants moved into
// a cgroup or otherwise acted on, may be: root may act on anyone; anyone
// else only on a process whose real and effective uid are both theirs (so
// a setuid program started by the requester is out of its reach).
// PERMISSION naming the uids if not.
Status check_same_user(pid_t target, uid_t requester);

}  // namespace mlos::os
