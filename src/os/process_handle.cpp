// SPDX-License-Identifier: Apache-2.0
#include "os/process_handle.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>

#include "os/durable_file.h"
#include "os/peer_credentials.h"
#include "os/process_info.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5; glibc 2.36 predates it
#endif

namespace mlos::os {

namespace {

Error gone(const std::string& what) { return make_sys_error(ESRCH, what, MLOS_ERR_NO_SUCH_THREAD); }

}  // namespace

Result<ProcessHandle> ProcessHandle::open(pid_t pid) {
  if (pid <= 0) return gone("no process " + std::to_string(pid));
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH) return gone("process " + std::to_string(pid) + " does not exist");
    return make_sys_error(errno, "pidfd_open " + std::to_string(pid));
  }
  return ProcessHandle(UniqueFd(fd));
}

Result<ProcessHandle> ProcessHandle::socket_peer(int socket_fd) {
  int fd = -1;
  socklen_t len = sizeof fd;
  if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0) {
    // The kernel's pidfd is not close-on-exec by default on every version.
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return ProcessHandle(UniqueFd(fd));
  }
  if (errno != ENOPROTOOPT && errno != EINVAL) return make_sys_error(errno, "SO_PEERPIDFD");
  auto cred = peer_credentials(socket_fd);
  if (!cred) return cred.error();
  return open(cred->pid);
}

bool ProcessHandle::exited() const {
  pollfd p{fd_.get(), POLLIN, 0};
  for (;;) {
    const int n = poll(&p, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    // An error polling our own pidfd says nothing about the process: only a
    // readable pidfd proves it exited.
    return n > 0 && (p.revents & POLLIN) != 0;
  }
}

Result<pid_t> ProcessHandle::pid() const {
  if (!fd_.valid()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "no process handle");
  auto text = read_whole_file("/proc/self/fdinfo/" + std::to_string(fd_.get()));
  if (!text) return text.error();
  if (!text->has_value()) return make_error(MLOS_ERR_SYSTEM, "no fdinfo for a pidfd");
  const std::string& info = **text;
  const size_t at = info.find("\nPid:");
  if (at == std::string::npos) return make_error(MLOS_ERR_SYSTEM, "fdinfo of a pidfd has no Pid line");
  size_t p = at + 5;
  while (p < info.size() && (info[p] == ' ' || info[p] == '\t')) ++p;
  int pid = 0;
  auto [end, ec] = std::from_chars(info.data() + p, info.data() + info.size(), pid);
  if (ec != std::errc()) return make_error(MLOS_ERR_SYSTEM, "fdinfo of a pidfd has a malformed Pid line");
  // -1 once reaped; 0 if the process is in no pid namespace we can see.
  if (pid <= 0 || exited()) return gone("the process has exited");
  return static_cast<pid_t>(pid);
}

Result<ProcessId> ProcessHandle::identity() const {
  auto p = pid();
  if (!p) return p.error();
  auto id = process_id(*p);
  if (!id) return id.error();
  // Had it exited before the read, the pid could have been another's.
  if (exited()) return gone("the process has exited");
  return *id;
}

Result<ProcessHandle> ProcessHandle::duplicate() const {
  const int fd = fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return make_sys_error(errno, "dup of a pidfd");
  return ProcessHandle(UniqueFd(fd));
}

Status check_same_user(pid_t target, uid_t requester) {
  if (requester == 0) return Status::Ok();
  auto uids = process_uids(target);
  if (!uids) return uids.error();
  if (uids->real != requester || uids->effective != requester) {
    return make_error(MLOS_ERR_PERMISSION, "pid " + std::to_string(target) + " runs as uid " +
                                               std::to_string(uids->real) + " (effective " +
                                               std::to_string(uids->effective) + "), not as uid " +
                                               std::to_string(requester));
  }
  return Status::Ok();
}

}  // namespace mlos::os
