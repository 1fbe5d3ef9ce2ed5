/* SPDX-License-Identifier: Apache-2.0 */
// Runs a function in a forked child and collects what it reports through a
// pipe; used for tests that need another process (other claims, other
// credentials). The child must only be forked while the test process has no
// other threads running.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace mlos_test {

class ChildProcess {
 public:
  // `body` runs in the child; what it writes with report() reaches the
  // parent's read_line(). The child then waits to be killed when `linger`,
  // else exits with body's return value.
  ChildProcess(const std::function<int(ChildProcess&)>& body, bool linger) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      out_ = fds[1];
      int rc = body(*this);
      if (linger) {
        for (;;) pause();
      }
      _exit(rc);
    }
    close(fds[1]);
    in_ = fds[0];
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (in_ >= 0) close(in_);
  }

  void report(const std::string& line) {
    std::string l = line + "\n";
    (void)!write(out_, l.data(), l.size());
  }
  std::string read_line() {
    std::string line;
    char c;
    while (read(in_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  // SIGKILL and reap; returns once the process is gone.
  void kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Waits for a non-lingering child; its exit code, or -1.
  int wait_exit() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
};

}  // namespace mlos_test
