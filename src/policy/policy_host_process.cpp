// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_host_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "os/spawn_process.h"
#include "os/trusted_path.h"
#include "os/unix_socket.h"

namespace mlos::policy {

using nlohmann::json;

namespace {

constexpr int kHostFd = 3;
constexpr int kModuleFd = 4;

uint64_t monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace

Result<std::unique_ptr<PolicyHostProcess>> PolicyHostProcess::spawn(const HostLaunch& launch) {
  if (geteuid() == 0) {
    if (std::string why = os::untrusted_reason(launch.host_binary); !why.empty()) {
      return make_error(MLOS_ERR_PERMISSION, "the policy host " + launch.host_binary +
                                                 " is not run (it would start as root): " + why);
    }
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return make_sys_error(errno, "socketpair for policy host");
  }
  os::UniqueFd ours(pair[0]), theirs(pair[1]), module;
  // Room for a whole frame and then some: one event is in flight at a
  // time, so a send never finds the previous frame unread and never
  // blocks its caller (the kernel doubles the value and caps it at
  // net.core.wmem_max, 425,984 bytes by default: still above a frame).
  const int sndbuf = 2 * static_cast<int>(kMaxHostPayload);
  (void)setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  // A descriptor already at a number the child gets would be dup2()ed onto
  // itself (keeping close-on-exec) or overwritten before it is copied:
  // such ones are moved above both numbers first.
  auto above_targets = [](int fd) { return os::UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, kModuleFd + 1)); };
  if (theirs.get() == kHostFd || theirs.get() == kModuleFd) {
    theirs = above_targets(theirs.get());
    if (!theirs.valid()) return make_sys_error(errno, "dup for policy host");
  }
  int module_fd = launch.module_fd;
  if (module_fd == kHostFd || module_fd == kModuleFd) {
    module = above_targets(module_fd);
    if (!module.valid()) return make_sys_error(errno, "dup for policy host");
    module_fd = module.get();
  }
  const std::string parent = std::to_string(getpid()), fd = std::to_string(kHostFd),
                    memory = std::to_string(launch.memory_limit);
  std::vector<std::string> args{launch.host_binary, "--policy", launch.policy_path, "--name", launch.name,
                                "--fd", fd, "--parent", parent, "--memory-limit", memory};
  if (!launch.run_as.empty()) {
    args.push_back("--run-as");
    args.push_back(launch.run_as);
  }
  std::vector<os::SpawnedFd> fds{{theirs.get(), kHostFd}};
  if (module_fd >= 0) {
    args.push_back("--policy-fd");
    args.push_back(std::to_string(kModuleFd));
    fds.push_back({module_fd, kModuleFd});
  }
  auto pid = os::spawn_process(launch.host_binary, args, fds, "policy host");
  if (!pid) return pid.error();
  return std::unique_ptr<PolicyHostProcess>(new PolicyHostProcess(*pid, std::move(ours)));
}

PolicyHostProcess::~PolicyHostProcess() { terminate(); }

Result<uint64_t> PolicyHostProcess::send(const std::string& op, json args, int timeout_ms) {
  if (!fd_.valid()) return make_error(MLOS_ERR_PEER_LOST, "the policy host has ended");
  const uint64_t id = next_id_++;
  args["op"] = op;
  args["id"] = id;
  auto bytes = protocol::encode_frame(protocol::FrameKind::kRequest, args, kMaxHostPayload);
  if (!bytes) return bytes.error();
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (Status s = os::send_all(fd_.get(), *bytes); !s) {
    return make_sys_error(s.error().sys_errno, "policy host stopped reading: " + s.error().message,
                          s.error().sys_errno == EAGAIN ? MLOS_ERR_TIMEOUT : MLOS_ERR_PEER_LOST);
  }
  return id;
}

Result<std::vector<HostReply>> PolicyHostProcess::receive() {
  std::vector<HostReply> replies;
  if (!fd_.valid()) return make_error(MLOS_ERR_PEER_LOST, "the policy host has ended");
  char buf[16384];
  for (;;) {
    auto frame = decoder_.next();
    if (!frame) return make_error(MLOS_ERR_PEER_LOST, "policy host sent a malformed frame: " + frame.error().message);
    if (frame->has_value()) {
      if ((*frame)->kind != protocol::FrameKind::kReply) {
        return make_error(MLOS_ERR_PEER_LOST, "policy host sent something other than a reply");
      }
      auto reply = parse_host_reply((*frame)->payload);
      if (!reply) return make_error(MLOS_ERR_PEER_LOST, reply.error().message);
      replies.push_back(std::move(*reply));
      continue;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return replies;
    auto n = os::recv_some(fd_.get(), buf, sizeof buf, nullptr);
    // A host that exits without reading what was sent to it (one that
    // refused to load its policy before the first request arrived) leaves
    // ECONNRESET behind its last frames: those frames are still said first,
    // the refusal among them.
    if (!n || *n == 0) {
      if (!replies.empty()) return replies;  // the rest is said by the next call
      if (!n) return make_sys_error(n.error().sys_errno, "policy host: " + n.error().message, MLOS_ERR_PEER_LOST);
      return make_error(MLOS_ERR_PEER_LOST, "the policy host closed its socket");
    }
    decoder_.feed(std::string_view(buf, *n));
  }
}

Result<HostReply> PolicyHostProcess::wait_reply(uint64_t id, int timeout_ms) {
  const uint64_t until = monotonic_ms() + static_cast<uint64_t>(timeout_ms);
  for (;;) {
    auto replies = receive();
    if (!replies) return replies.error();
    for (auto& r : *replies) {
      // Id 0: the host's refusal to serve at all (it could not confine
      // itself or load the policy), sent before any request was read.
      if (r.id == id || (r.id == 0 && r.error)) return std::move(r);
    }
    const uint64_t now = monotonic_ms();
    if (now >= until) return make_error(MLOS_ERR_TIMEOUT, "the policy host did not answer within " +
                                                            std::to_string(timeout_ms) + " ms");
    pollfd p{fd_.get(), POLLIN, 0};
    (void)poll(&p, 1, static_cast<int>(until - now));
  }
}

std::string PolicyHostProcess::terminate() {
  if (!ended_.empty()) return ended_;
  fd_.reset();
  if (pid_ <= 0) return ended_ = "never started";
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    // Still running (a hang, or told to go): SIGKILL cannot be ignored,
    // so the blocking wait that follows is short.
    kill(pid_, SIGKILL);
    do {
      r = waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
  }
  ended_ = r == pid_ ? os::describe_wait_status(status) : "ended (not reaped: " + std::string(strerror(errno)) + ")";
  return ended_;
}

}  // namespace mlos::policy
