// SPDX-License-Identifier: Apache-2.0
#include "os/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace mlos::os {

namespace {

Result<sockaddr_un> address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "socket path '" + path + "' is empty or longer than " +
                                                     std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

Result<UniqueFd> new_socket(int flags) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  if (!fd.valid()) return make_sys_error(errno, "socket(AF_UNIX)");
  return fd;
}

}  // namespace

Result<UniqueFd> connect_unix(const std::string& path, int timeout_ms) {
  auto addr = address_of(path);
  if (!addr) return addr.error();
  auto fd = new_socket(0);
  if (!fd) return fd.error();
  // A Unix connect waits for room in a full backlog for the send timeout:
  // bound it, so a saturated daemon is an error, not a hang.
  if (timeout_ms > 0) {
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd->get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  int rc;
  do {
    rc = connect(fd->get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_un));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return make_sys_error(errno, "connect to " + path);
  return std::move(fd.value());
}

Result<UniqueFd> listen_unix(const std::string& path, mode_t mode, int backlog) {
  auto addr = address_of(path);
  if (!addr) return addr.error();
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " exists and is not a socket; refusing to replace it");
    }
    if (auto live = connect_unix(path)) {
      return make_sys_error(EADDRINUSE, "another daemon already answers on " + path);
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return make_sys_error(errno, "unlink stale socket " + path);
  }
  auto fd = new_socket(SOCK_NONBLOCK);
  if (!fd) return fd.error();
  // The path appears only once the socket accepts: bound and listening
  // under a temporary name beside it, then renamed into place. A client
  // that finds the path between bind and listen would be refused and take
  // it for "nobody listens" (MLOS_MODE=auto would fall back to the embedded
  // engine). Where the temporary name does not fit sun_path, the path
  // itself is bound (that window remains).
  const std::string staged = path + ".new";
  const bool rename_in = address_of(staged).ok();
  const std::string& bound = rename_in ? staged : path;
  // A socket left there by a daemon that died mid-start is stale (bind
  // fails on anything else, naming it).
  if (rename_in && lstat(staged.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && unlink(staged.c_str()) != 0) {
    return make_sys_error(errno, "unlink stale " + staged);
  }
  auto bound_addr = address_of(bound);
  if (!bound_addr) return bound_addr.error();
  // fchmod on a socket before bind is not honoured on Linux; bind under a
  // restrictive umask, then chmod the path to the requested mode.
  const mode_t old = umask(0177);
  const int rc = bind(fd->get(), reinterpret_cast<const sockaddr*>(&*bound_addr), sizeof(sockaddr_un));
  const int bind_errno = errno;
  umask(old);
  if (rc != 0) return make_sys_error(bind_errno, "bind " + bound);
  Status ready = Status::Ok();
  if (chmod(bound.c_str(), mode) != 0) {
    ready = make_sys_error(errno, "chmod " + bound);
  } else if (listen(fd->get(), backlog) != 0) {
    ready = make_sys_error(errno, "listen on " + bound);
  } else if (rename_in && rename(staged.c_str(), path.c_str()) != 0) {
    ready = make_sys_error(errno, "rename " + staged + " to " + path);
  }
  if (!ready) {
    unlink(bound.c_str());
    return ready.error();
  }
  return std::move(fd.value());
}

Status send_all(int socket_fd, std::string_view bytes, int pass_fd, size_t* written) {
  size_t done = 0;
  if (written != nullptr) *written = 0;
  while (done < bytes.size()) {
    iovec iov{const_cast<char*>(bytes.data() + done), bytes.size() - done};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (pass_fd >= 0 && done == 0) {
      std::memset(control, 0, sizeof control);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    const ssize_t n = sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error(errno, "send on control socket");
    }
    done += static_cast<size_t>(n);
    if (written != nullptr) *written = done;
  }
  return Status::Ok();
}

Result<size_t> recv_some(int socket_fd, char* buf, size_t cap, std::vector<UniqueFd>* fds) {
  iovec iov{buf, cap};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return make_sys_error(errno, "receive on control socket");
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      UniqueFd owned(fd);
      if (fds != nullptr) fds->push_back(std::move(owned));
    }
  }
  return static_cast<size_t>(n);
}

}  // namespace mlos::os
