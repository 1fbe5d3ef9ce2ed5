// SPDX-License-Identifier: Apache-2.0
#include "policy_describe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "mlos/errors.h"
#include "os/unique_fd.h"

namespace mlos::cli {

namespace {

constexpr size_t kMaxOutput = 1 << 20;  // a description is a few KiB

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Reads both pipes until both close or the deadline passes; false on timeout.
bool drain(int out_fd, int err_fd, std::string& out, std::string& err, int64_t deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) return false;
    const int n = poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // timed out (or poll failed: treated alike, the host is killed)
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (sinks[i]->size() < kMaxOutput) sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  return true;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Result<nlohmann::json> describe_policy(const std::string& host, const std::string& path, const std::string& name,
                                       int timeout_ms) {
  if (access(host.c_str(), X_OK) != 0) {
    return make_sys_error(errno, "the policy host " + host + " cannot be run", MLOS_ERR_NOT_FOUND);
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return make_sys_error(errno, "pipe");
  os::UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return make_sys_error(errno, "pipe");
  os::UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  const char* argv[] = {host.c_str(), "--policy", path.c_str(), "--name", name.c_str(), "--describe", nullptr};
  const pid_t pid = fork();
  if (pid < 0) return make_sys_error(errno, "fork");
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out_w.get(), STDOUT_FILENO);
    dup2(err_w.get(), STDERR_FILENO);
    execv(host.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  out_w.reset();
  err_w.reset();
  std::string out, err;
  const bool finished = drain(out_r.get(), err_r.get(), out, err, now_ms() + timeout_ms);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string said = trimmed(err).empty() ? "" : ": " + trimmed(err);
  if (!finished) {
    return make_error(MLOS_ERR_POLICY_FAILED, "policy '" + name + "' did not describe itself within " +
                                                  std::to_string(timeout_ms) + " ms (killed)" + said);
  }
  if (WIFSIGNALED(status)) {
    return make_error(MLOS_ERR_POLICY_FAILED, "the policy host died of signal " + std::to_string(WTERMSIG(status)) +
                                                  " describing '" + name + "'" + said);
  }
  if (WEXITSTATUS(status) != 0) {
    return make_error(MLOS_ERR_POLICY_FAILED, "the policy host exited " + std::to_string(WEXITSTATUS(status)) +
                                                  " describing '" + name + "'" + said);
  }
  auto parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return make_error(MLOS_ERR_POLICY_FAILED, "the policy host printed no JSON object for '" + name + "'" + said);
  }
  return parsed;
}

}  // namespace mlos::cli
