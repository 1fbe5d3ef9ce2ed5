// SPDX-License-Identifier: Apache-2.0
// The policy host's confinement (os/sandbox), checked by the kernel: each
// test forks a child that confines itself, and the test reads the effect
// from outside (/proc/<pid>/status and limits, the child's fate under
// waitpid) or from what the child sends over its one kept socket.
#include "os/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "os_integration/sandboxed_child.h"

using mlos::os::enter_sandbox;
using mlos::os::lock_down_syscalls;
using mlos::os::SandboxLimits;
using mlos_test::hear;
using mlos_test::SandboxedChild;
using mlos_test::say;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(MLOS_TEST_UNDER_ASAN) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // shadow memory outgrows RLIMIT_AS; the runtime makes its own calls
#else
constexpr bool kSanitized = false;
#endif

// Enters the sandbox with `limits` keeping only `sock`; on failure sends
// "error <code> <message>" and returns false.
bool enter(int sock, const SandboxLimits& limits = {}) {
  auto r = enter_sandbox(limits, {sock});
  if (!r) say(sock, "error " + std::to_string(r.error().code) + " " + r.error().describe());
  return r.ok();
}

bool lock(int sock) {
  mlos::Status s = lock_down_syscalls();
  if (!s) say(sock, "error " + s.error().describe());
  return s.ok();
}

std::string four(unsigned id) {
  std::string s = std::to_string(id);
  return s + "\t" + s + "\t" + s + "\t" + s;
}

bool killed_by_sigsys(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS; }

}  // namespace

TEST(Sandbox, RootBecomesNobodyWithoutGroupsOrCapabilitiesThenGetsTheFilter) {
  if (geteuid() != 0)
    GTEST_SKIP() << "dropping privileges needs root; the unprivileged path is "
                    "tested below";
  if (kSanitized) GTEST_SKIP() << "sanitizer runtimes do not survive the limits and the filter";
  const passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr) << "no user nobody on this machine";
  SandboxedChild child([](int sock) {
    if (!enter(sock)) return 1;
    say(sock, "entered");
    hear(sock);
    if (!lock(sock)) return 2;
    say(sock, "locked");
    hear(sock);
    return 0;
  });
  ASSERT_EQ(child.read_line(), "entered");
  EXPECT_EQ(child.status_field("Uid"), four(nobody->pw_uid));
  EXPECT_EQ(child.status_field("Gid"), four(nobody->pw_gid));
  EXPECT_EQ(child.status_field("Groups"), "");
  EXPECT_EQ(child.status_field("NoNewPrivs"), "1");
  EXPECT_EQ(child.status_field("CapPrm"), "0000000000000000");
  EXPECT_EQ(child.status_field("CapEff"), "0000000000000000");
  EXPECT_EQ(child.status_field("Seccomp"), "0");  // step 1 has no filter yet
  child.send("go");
  ASSERT_EQ(child.read_line(), "locked");
  EXPECT_EQ(child.status_field("Seccomp"), "2");
  EXPECT_GE(std::atoi(child.status_field("Seccomp_filters").c_str()), 1);
  child.send("go");
  int status = child.wait_status();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(Sandbox, WithoutRootKeepsItsUidAndSaysSo) {
  if (kSanitized) GTEST_SKIP() << "sanitizer runtimes do not survive the limits";
  const passwd* nobody = getpwnam("nobody");
  const uid_t expected = geteuid() == 0 ? (nobody ? nobody->pw_uid : 65534) : geteuid();
  SandboxedChild child([&](int sock) {
    // As root, become an ordinary user first: the path an unprivileged
    // library takes.
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(expected, expected, expected) != 0 ||
                           setresuid(expected, expected, expected) != 0)) {
      return 9;
    }
    auto r = enter_sandbox({}, {sock});
    if (!r) {
      say(sock, "error " + r.error().describe());
      return 1;
    }
    say(sock, r->to_json().dump());
    hear(sock);
    return 0;
  });
  auto report = nlohmann::json::parse(child.read_line(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << "the child failed before reporting";
  EXPECT_EQ(report["privileges_dropped"], false);
  EXPECT_EQ(report["uid"], expected);
  EXPECT_NE(report["notes"][0].get<std::string>().find("not root"), std::string::npos) << report["notes"][0];
  EXPECT_EQ(child.status_field("Uid"), four(expected));
  EXPECT_EQ(child.status_field("NoNewPrivs"), "1");
  child.send("go");
  int status = child.wait_status();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// The nice value of process `pid` (/proc/<pid>/stat, field 19).
int nice_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 19 && fields >> field; ++i) {
  }
  return std::stoi(field);
}

TEST(Sandbox, NiceOutsideItsRangeIsRefusedBeforeAnyChange) {
  for (int bad : {-1, 20}) {
    SandboxLimits limits;
    limits.min_nice = bad;
    SandboxedChild child([&](int sock) {
      auto r = enter_sandbox(limits, {sock});
      say(sock, r.ok() ? "entered" : std::to_string(r.error().code) + " " + r.error().message);
      hear(sock);
      return 0;
    });
    const std::string line = child.read_line();
    EXPECT_EQ(line.rfind(std::to_string(MLOS_ERR_INVALID_ARGUMENT) + " min_nice", 0), 0u) << line;
    EXPECT_NE(line.find("nothing changed"), std::string::npos) << line;
    EXPECT_EQ(child.limit("Max nice priority"), SandboxedChild::limit_of("self", "Max nice priority"));
    EXPECT_EQ(nice_of(child.pid()), nice_of(getpid()));
    child.send("go");
  }
}

TEST(Sandbox, LimitsShowInProcAndMallocBeyondTheAddressSpaceFails) {
  if (kSanitized) GTEST_SKIP() << "shadow memory outgrows RLIMIT_AS";
  SandboxLimits limits;
  limits.address_space_bytes = 256ull << 20;
  limits.cpu_seconds = 3600;
  limits.max_open_files = 32;
  limits.min_nice = 10;
  SandboxedChild child([&](int sock) {
    if (!enter(sock, limits)) return 1;
    say(sock, "entered");
    hear(sock);
    // Nice may not go back down (RLIMIT_NICE 0, no CAP_SYS_NICE left).
    if (setpriority(PRIO_PROCESS, 0, 0) == 0 || getpriority(PRIO_PROCESS, 0) != 10) return 3;
    if (!lock(sock)) return 2;
    // Under the filter too: malloc's mmap is allowed, and refused by the limit.
    void* big = malloc(512ull << 20);
    char* small = static_cast<char*>(malloc(16u << 20));
    if (small != nullptr) memset(small, 1, 16u << 20);
    say(sock,
        std::string(big == nullptr ? "big:null" : "big:granted") + (small != nullptr ? " small:ok" : " small:null"));
    return 0;
  });
  ASSERT_EQ(child.read_line(), "entered");
  EXPECT_EQ(child.limit("Max address space"), "268435456 268435456");
  EXPECT_EQ(child.limit("Max open files"), "32 32");
  EXPECT_EQ(child.limit("Max cpu time"), "3600 3601");
  EXPECT_EQ(child.limit("Max core file size"), "0 0");
  EXPECT_EQ(child.limit("Max nice priority"), "0 0");
  EXPECT_EQ(nice_of(child.pid()), 10);
  // RLIMIT_NPROC is deliberately left as it was (see SandboxLimits).
  EXPECT_EQ(child.limit("Max processes"), SandboxedChild::limit_of("self", "Max processes"));
  child.send("go");
  EXPECT_EQ(child.read_line(), "big:null small:ok");
  int status = child.wait_status();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(Sandbox, OpenUnderTheFilterKillsWithSigsysWhileTheSocketStillWorks) {
  if (kSanitized) GTEST_SKIP() << "sanitizer runtimes do not survive the filter";
  SandboxedChild child([](int sock) {
    if (!enter(sock) || !lock(sock)) return 1;
    say(sock, "locked");
    say(sock, "echo:" + hear(sock));
    int fd = open("/etc/hostname", O_RDONLY);
    say(sock, "open returned " + std::to_string(fd));
    return 3;
  });
  ASSERT_EQ(child.read_line(), "locked");
  child.send("ping");
  EXPECT_EQ(child.read_line(),
            "echo:ping");            // read and write on the kept socket
  EXPECT_EQ(child.read_line(), "");  // nothing after the open: EOF
  int status = child.wait_status();
  EXPECT_TRUE(killed_by_sigsys(status)) << "status " << status;
}

TEST(Sandbox, ForkUnderTheFilterKillsWithSigsys) {
  if (kSanitized) GTEST_SKIP() << "sanitizer runtimes do not survive the filter";
  SandboxedChild child([](int sock) {
    if (!enter(sock) || !lock(sock)) return 1;
    say(sock, "locked");
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    say(sock, "fork returned " + std::to_string(pid));
    return 4;
  });
  ASSERT_EQ(child.read_line(), "locked");
  EXPECT_EQ(child.read_line(), "");
  int status = child.wait_status();
  EXPECT_TRUE(killed_by_sigsys(status)) << "status " << status;
}

TEST(Sandbox, OnlyKeptDescriptorsStayOpen) {
  if (kSanitized) GTEST_SKIP() << "sanitizer runtimes do not survive the limits";
  SandboxedChild child([](int sock) {
    int pipe_fds[2];
    if (open("/dev/null", O_RDONLY) < 0 || pipe(pipe_fds) != 0 || dup2(pipe_fds[1], 40) != 40) return 9;
    auto r = enter_sandbox({}, {sock, 40});
    if (!r) {
      say(sock, "error " + r.error().describe());
      return 1;
    }
    // Listed before the filter forbids opening the directory.
    std::string line = "sock=" + std::to_string(sock) + " open=";
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return 2;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.' && std::atoi(e->d_name) != dirfd(dir)) line += std::string(e->d_name) + ",";
    }
    closedir(dir);
    say(sock, line);
    return 0;
  });
  std::string line = child.read_line();
  ASSERT_EQ(line.rfind("sock=", 0), 0u) << line;
  std::string sock = line.substr(5, line.find(' ') - 5);
  std::set<int> open;
  std::stringstream list(line.substr(line.find("open=") + 5));
  for (std::string fd; std::getline(list, fd, ',');) open.insert(std::stoi(fd));
  EXPECT_EQ(open, (std::set<int>{std::stoi(sock), 40})) << line;
  int status = child.wait_status();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// A refused request changes nothing: the child keeps its uid, its
// descriptors, its limits and may still gain privileges, so a caller that
// ignored the error would at least not believe it was confined; the
// contract is that it exits.
TEST(Sandbox, UnknownRunAsUserIsRefusedBeforeAnyChange) {
  uid_t unused = 3999999000u;
  while (getpwuid(unused) != nullptr || getgrgid(unused) != nullptr) ++unused;
  SandboxedChild child([&](int sock) {
    int marker = open("/dev/null", O_RDONLY);
    auto r = enter_sandbox({}, {sock}, std::pair<uid_t, gid_t>{unused, unused});
    say(sock,
        r ? "entered" : std::to_string(r.error().code) + " fd=" + std::to_string(marker) + " " + r.error().message);
    hear(sock);
    return 0;
  });
  std::string line = child.read_line();
  // Root: no such user. Not root: run_as needs root.
  const int code = geteuid() == 0 ? MLOS_ERR_INVALID_ARGUMENT : MLOS_ERR_PERMISSION;
  EXPECT_EQ(line.rfind(std::to_string(code) + " ", 0), 0u) << line;
  if (geteuid() == 0) {
    EXPECT_NE(line.find("run_as uid " + std::to_string(unused) + ": no such user"), std::string::npos) << line;
  }
  EXPECT_EQ(child.status_field("Uid"), four(geteuid()));
  EXPECT_EQ(child.status_field("NoNewPrivs"), "0");
  EXPECT_EQ(child.limit("Max address space"), SandboxedChild::limit_of("self", "Max address space"));
  std::string marker = line.substr(line.find("fd=") + 3);
  marker = marker.substr(0, marker.find(' '));
  EXPECT_EQ(access(("/proc/" + std::to_string(child.pid()) + "/fd/" + marker).c_str(), F_OK), 0)
      << "descriptor " << marker << " was closed";
  child.send("go");
}

TEST(Sandbox, LimitAboveTheHardLimitIsRefusedBeforeAnyChange) {
  SandboxedChild child([](int sock) {
    rlimit low{16, 16};
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) return 9;
    auto r = enter_sandbox({}, {sock});  // asks for 64 open files
    say(sock, r ? "entered" : std::to_string(r.error().code) + " " + r.error().message);
    hear(sock);
    return 0;
  });
  std::string line = child.read_line();
  EXPECT_EQ(line.rfind(std::to_string(MLOS_ERR_PERMISSION) + " RLIMIT_NOFILE: asked for 64", 0), 0u) << line;
  EXPECT_NE(line.find("nothing changed"), std::string::npos) << line;
  EXPECT_EQ(child.status_field("Uid"), four(geteuid()));
  EXPECT_EQ(child.status_field("NoNewPrivs"), "0");
  EXPECT_EQ(child.limit("Max address space"), SandboxedChild::limit_of("self", "Max address space"));
  EXPECT_EQ(child.limit("Max core file size"), SandboxedChild::limit_of("self", "Max core file size"));
  child.send("go");
}

TEST(Sandbox, AThreadedProcessIsRefused) {
  SandboxedChild child([](int sock) {
    int p[2];
    if (pipe(p) != 0) return 9;
    std::thread waiter([&] {
      char c;
      (void)!read(p[0], &c, 1);
    });
    auto r = enter_sandbox({}, {sock});
    say(sock, r ? "entered" : std::to_string(r.error().code) + " " + r.error().message);
    (void)!write(p[1], "x", 1);
    waiter.join();
    return 0;
  });
  std::string line = child.read_line();
  EXPECT_EQ(
      line.rfind(
          std::to_string(MLOS_ERR_INVALID_ARGUMENT) + " enter_sandbox needs a single-threaded process (2 threads)", 0),
      0u)
      << line;
  int status = child.wait_status();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(Sandbox, TheAllowlistHasTheHostsCallsAndNothingThatOpensOrSpawns) {
  auto allowed = mlos::os::sandbox_allowed_syscalls();
  std::set<std::string> names(allowed.begin(), allowed.end());
  for (const char* needed : {"read", "write", "sendmsg", "recvmsg", "poll", "futex", "mmap", "exit_group"}) {
    EXPECT_TRUE(names.count(needed)) << needed;
  }
  for (const char* forbidden : {"open", "openat", "execve", "socket", "connect", "ptrace", "kill", "clone", "clone3",
                                "fork", "vfork", "setrlimit", "prlimit64", "prctl", "seccomp"}) {
    EXPECT_FALSE(names.count(forbidden)) << forbidden;
  }
  // The data loader's profile adds reading files and driving the io_uring
  // ring it made before the lock-down: no new ring (it would have no
  // restriction), no registration.
  auto loader = mlos::os::sandbox_allowed_syscalls(mlos::os::SyscallProfile::kDataLoader);
  std::set<std::string> loader_names(loader.begin(), loader.end());
  for (const char* needed : {"openat", "pread64", "io_uring_enter"}) EXPECT_TRUE(loader_names.count(needed)) << needed;
  for (const char* forbidden : {"io_uring_setup", "io_uring_register", "execve", "socket", "clone", "clone3"}) {
    EXPECT_FALSE(loader_names.count(forbidden)) << forbidden;
  }
  EXPECT_FALSE(names.count("io_uring_enter"));
}
