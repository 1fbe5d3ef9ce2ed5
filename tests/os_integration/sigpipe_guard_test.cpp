// SPDX-License-Identifier: Apache-2.0
// SigpipeGuard on the real kernel: a write to a socket whose peer is gone
// fails with EPIPE inside the guard instead of killing the process, leaves
// no SIGPIPE pending, and restores the thread's mask. Each case runs in a
// forked child, so a failure shows as a child killed by SIGPIPE.
#include "os/sigpipe_guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <thread>

namespace mlos::os {
namespace {

// Runs `body` in a child with SIGPIPE at its default action; the child's
// wait status.
int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Writes to a stream socket whose other end is closed; returns errno.
int write_to_dead_peer() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return -1;
  close(fds[1]);
  const char byte = 0;
  const ssize_t n = write(fds[0], &byte, 1);
  const int err = n < 0 ? errno : 0;
  close(fds[0]);
  return err;
}

bool sigpipe_blocked() {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, SIGPIPE) == 1;
}

TEST(SigpipeGuard, WithoutItAWriteToADeadPeerKillsTheProcess) {
  const int status = in_child([] { return write_to_dead_peer() == EPIPE ? 0 : 1; });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGPIPE);
}

TEST(SigpipeGuard, InsideItTheWriteFailsWithEpipeAndNothingStaysPending) {
  const int status = in_child([] {
    int err = 0;
    {
      SigpipeGuard guard;
      if (!sigpipe_blocked()) return 2;
      err = write_to_dead_peer();
    }
    if (sigpipe_blocked()) return 3;  // mask restored
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) return 4;
    return err == EPIPE ? 0 : 5;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SigpipeGuard, ThreadsStartedAfterBlockingInheritTheBlock) {
  const int status = in_child([] {
    block_sigpipe_in_this_thread();
    int err = 0;
    std::thread([&] { err = write_to_dead_peer(); }).join();
    return err == EPIPE ? 0 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace mlos::os
