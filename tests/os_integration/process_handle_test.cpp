// SPDX-License-Identifier: Apache-2.0
// Processes held by pidfd, on the real kernel: the peer of a socket, a
// process that exits, a pid that is reused (forced through ns_last_pid), a
// process that changed user, and what /proc liveness says when the caller
// is out of descriptors.
#include "os/process_handle.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "os/cgroup/checked_attach.h"
#include "os/process_info.h"

namespace mlos::os {
namespace {

// A child that waits on a pipe until told to exit (closing the pipe).
struct Child {
  pid_t pid = -1;
  int release_fd = -1;

  static Child start() {
    int p[2];
    if (pipe(p) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[1]);
      char c;
      (void)!read(p[0], &c, 1);
      _exit(0);
    }
    close(p[0]);
    return Child{pid, p[1]};
  }
  void finish() {
    if (release_fd >= 0) close(release_fd), release_fd = -1;
    if (pid > 0) waitpid(pid, nullptr, 0), pid = -1;
  }
};

// Records moves instead of writing cgroupfs: what is under test is which
// pid is trusted, not the hierarchy.
class RecordingDriver final : public CgroupDriver {
 public:
  std::vector<pid_t> moved;
  std::string version() const override { return "fake"; }
  Status create(const std::string&) override { return Status::Ok(); }
  Status apply(const std::string&, const CgroupLimits&, std::vector<std::string>*) override { return Status::Ok(); }
  Status set_cpu_weight(const std::string&, uint32_t) override { return Status::Ok(); }
  Status attach(const std::string&, pid_t pid) override {
    moved.push_back(pid);
    return Status::Ok();
  }
  Status detach(const std::string&, const std::string&) override { return Status::Ok(); }
  Result<std::vector<pid_t>> processes(const std::string&) const override { return std::vector<pid_t>{}; }
  Result<CgroupUsage> usage(const std::string&) const override { return CgroupUsage{}; }
  Status remove(const std::string&) override { return Status::Ok(); }
  Result<std::vector<std::string>> jobs() const override { return std::vector<std::string>{}; }
};

TEST(ProcessHandle, SocketPeerIsTheConnectingProcess) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  auto peer = ProcessHandle::socket_peer(sv[0]);
  ASSERT_TRUE(peer.ok()) << peer.error().describe();
  auto id = peer->identity();
  ASSERT_TRUE(id.ok()) << id.error().describe();
  EXPECT_EQ(*id, *process_id(getpid()));
  EXPECT_FALSE(peer->exited());
  close(sv[0]);
  close(sv[1]);
}

TEST(ProcessHandle, AnExitedProcessHasNoIdentityEvenBeforeItIsReaped) {
  Child c = Child::start();
  ASSERT_GT(c.pid, 0);
  auto h = ProcessHandle::open(c.pid);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->identity().ok());
  close(c.release_fd);
  c.release_fd = -1;
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOWAIT), 0);  // a zombie now
  EXPECT_TRUE(h->exited());
  auto id = h->identity();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, MLOS_ERR_NO_SUCH_THREAD);
  c.finish();
  EXPECT_EQ(h->identity().error().code, MLOS_ERR_NO_SUCH_THREAD);
}

// Forks until a child gets `pid` (writing ns_last_pid = pid - 1 first).
// The caller must finish() it. pid -1 if another process took it first.
Child child_with_pid(pid_t pid) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    {
      std::ofstream last("/proc/sys/kernel/ns_last_pid");
      last << pid - 1;
    }
    Child c = Child::start();
    if (c.pid == pid) return c;
    c.finish();
  }
  return {};
}

TEST(ProcessHandle, AReusedPidIsNeitherTheOldProcessNorMovedInItsPlace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to write /proc/sys/kernel/ns_last_pid";
  if (access("/proc/sys/kernel/ns_last_pid", W_OK) != 0) GTEST_SKIP() << "ns_last_pid is not writable here";
  Child first = Child::start();
  ASSERT_GT(first.pid, 0);
  const pid_t pid = first.pid;
  const ProcessId recorded = *process_id(pid);
  auto held = ProcessHandle::open(pid);
  ASSERT_TRUE(held.ok());
  first.finish();  // exited and reaped: the pid is free
  // A start time counts clock ticks (10 ms): a pid reused within the same
  // tick would carry the same identity. Reuse in the wild takes a whole
  // wrap of the pid space, so let a tick pass, as it would.
  usleep(30000);

  Child second = child_with_pid(pid);
  if (second.pid != pid) GTEST_SKIP() << "another process took pid " << pid << " first, 20 times";
  // The old handle does not follow the number to the new process...
  EXPECT_EQ(held->identity().error().code, MLOS_ERR_NO_SUCH_THREAD);
  // ...and a move on behalf of the recorded owner refuses the newcomer.
  RecordingDriver driver;
  Status s = attach_checked(driver, "job-1", recorded, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_NO_SUCH_THREAD) << s.error().describe();
  EXPECT_TRUE(driver.moved.empty());
  // The newcomer itself, named by its own identity, is moved.
  EXPECT_TRUE(attach_checked(driver, "job-1", *process_id(pid), 0).ok());
  EXPECT_EQ(driver.moved, std::vector<pid_t>{pid});
  second.finish();
}

TEST(ProcessHandle, OnlyRootMovesAProcessWhoseRealOrEffectiveUidIsNotTheRequesters) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change a child's uids";
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[1]);
    // Real uid stays root, effective becomes nobody: what a process looks
    // like after a user-owned connection met a setuid binary, seen the
    // other way round.
    if (setresuid(0, 65534, 0) != 0) _exit(2);
    char c;
    (void)!read(p[0], &c, 1);
    _exit(0);
  }
  close(p[0]);
  for (int i = 0; i < 1000 && process_uids(pid)->effective != 65534; ++i) usleep(1000);
  ASSERT_EQ(process_uids(pid)->effective, 65534u);
  EXPECT_EQ(process_uids(pid)->real, 0u);
  RecordingDriver driver;
  const ProcessId id = *process_id(pid);
  Status as_nobody = attach_checked(driver, "job-1", id, 65534);
  ASSERT_FALSE(as_nobody.ok());
  EXPECT_EQ(as_nobody.error().code, MLOS_ERR_PERMISSION) << as_nobody.error().describe();
  EXPECT_TRUE(driver.moved.empty());
  EXPECT_TRUE(attach_checked(driver, "job-1", id, 0).ok());
  close(p[1]);
  waitpid(pid, nullptr, 0);
}

TEST(ProcessLiveness, OutOfDescriptorsIsUnknownNotGone) {
  // In a child, so the lowered limit touches nothing else.
  const ProcessId parent = *process_id(getpid());
  const pid_t pid = fork();
  if (pid == 0) {
    rlimit r{};
    getrlimit(RLIMIT_NOFILE, &r);
    // Fill the table: every further open is EMFILE.
    r.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(10);
    for (int i = 0; i < 100 && open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0; ++i) {
    }
    if (open("/dev/null", O_RDONLY) >= 0 || errno != EMFILE) _exit(12);
    if (liveness(parent) != Liveness::kUnknown) _exit(13);
    if (!is_alive(parent)) _exit(14);
    if (liveness(ProcessId{parent.pid, parent.start_time + 1}) != Liveness::kUnknown) _exit(15);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 setrlimit, 12 not EMFILE, 13 not unknown, 14 not kept, "
                                       "15 a reused pid judged without reading";
  // With descriptors to spare, the same checks give proof.
  EXPECT_EQ(liveness(parent), Liveness::kAlive);
  EXPECT_EQ(liveness(ProcessId{parent.pid, parent.start_time + 1}), Liveness::kGone);
}

}  // namespace
}  // namespace mlos::os
