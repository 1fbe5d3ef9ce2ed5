// SPDX-License-Identifier: Apache-2.0
// Memory-pressure sources on the real kernel: PSI triggers under the
// privileged and unprivileged window rules, v1 usage-threshold eventfds
// firing when a child's allocation crosses them, and the figure parsers.
#include "os/memory_sources.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/proc_observer.h"

namespace mlos::os {
namespace {

TEST(PsiAverages, ParsesSomeAndFull) {
  auto a = parse_pressure_averages(
      "some avg10=12.50 avg60=1.00 avg300=0.10 total=123\nfull avg10=3.25 avg60=0.00 avg300=0.00 total=45\n");
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(a->some_avg10, 12.5);
  EXPECT_DOUBLE_EQ(a->full_avg10, 3.25);
  EXPECT_FALSE(parse_pressure_averages("full avg10=1.00 avg60=0 avg300=0 total=1\n"));
  EXPECT_FALSE(parse_pressure_averages("garbage"));
}

TEST(CgroupMemory, ReadsV2FilesAndSubtractsInactiveFile) {
  auto dir = std::filesystem::temp_directory_path() / ("mlos-memsrc-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "memory.current") << "1000000\n";
  std::ofstream(dir / "memory.max") << "max\n";
  std::ofstream(dir / "memory.stat") << "anon 700000\nfile 300000\ninactive_file 250000\n";
  auto m = read_cgroup_memory(MemoryCgroup{2, dir.string()});
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_EQ(m->usage, 1000000u);
  EXPECT_EQ(m->limit, UINT64_MAX);
  EXPECT_EQ(m->working_set, 750000u);
  std::ofstream(dir / "memory.max") << "4194304\n";
  EXPECT_EQ(read_cgroup_memory(MemoryCgroup{2, dir.string()})->limit, 4194304u);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(read_cgroup_memory(MemoryCgroup{2, dir.string()}));
}

TEST(PsiTrigger, FollowsThePrivilegedOrUnprivilegedWindowRule) {
  if (access("/proc/pressure/memory", F_OK) != 0) GTEST_SKIP() << "kernel without PSI";
  std::string note;
  auto t = open_psi_trigger("/proc/pressure/memory", "some", 100000, 1000000, &note);
  ASSERT_TRUE(t) << t.error().describe();
  if (mlos_test::has_cap_sys_resource()) {
    EXPECT_EQ(t->window_us, 1000000u);
    EXPECT_TRUE(note.empty()) << note;
  } else {
    // Unprivileged: the kernel refuses a 1 s window; the stall scales with it.
    EXPECT_EQ(t->window_us, 2000000u);
    EXPECT_EQ(t->stall_us, 200000u);
    EXPECT_NE(note.find("unprivileged"), std::string::npos) << note;
  }
  // A 2 s window is valid for everybody and needs no note.
  note.clear();
  auto two = open_psi_trigger("/proc/pressure/memory", "full", 150000, 2000000, &note);
  ASSERT_TRUE(two) << two.error().describe();
  EXPECT_EQ(two->window_us, 2000000u);
  EXPECT_TRUE(note.empty());
  // Nonsense is refused, not rounded.
  EXPECT_FALSE(open_psi_trigger("/proc/pressure/memory", "some", 3000000, 2000000, &note));
  EXPECT_EQ(open_psi_trigger("/nonexistent/pressure", "some", 1, 2000000, &note).error().code,
            MLOS_ERR_UNSUPPORTED);
}

TEST(V1MemoryEvents, UsageThresholdFiresWhenAChildCrossesIt) {
  const std::string root = "/sys/fs/cgroup/memory";
  if (access((root + "/cgroup.event_control").c_str(), W_OK) != 0) {
    GTEST_SKIP() << "no writable cgroup v1 memory controller";
  }
  const std::string dir = root + "/mlos-test-memsrc-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << strerror(errno);
  std::ofstream(dir + "/memory.limit_in_bytes") << (256 << 20);
  MemoryCgroup cg{1, dir};
  auto crossing = v1_usage_threshold_event(cg, 64 << 20);
  ASSERT_TRUE(crossing) << crossing.error().describe();
  auto medium = v1_pressure_level_event(cg, "medium");
  ASSERT_TRUE(medium) << medium.error().describe();
  EXPECT_EQ(v1_pressure_level_event(cg, "bogus").error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(v1_usage_threshold_event(MemoryCgroup{2, dir}, 1).error().code, MLOS_ERR_UNSUPPORTED);

  pollfd before{crossing->get(), POLLIN, 0};
  EXPECT_EQ(poll(&before, 1, 0), 0);  // nothing crossed yet
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  if (child == 0) {
    char c;
    (void)!read(go[0], &c, 1);  // joined the cgroup
    const size_t bytes = 96u << 20;
    char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    memset(p, 1, bytes);
    pause();
    _exit(0);
  }
  std::ofstream(dir + "/cgroup.procs") << child;
  ASSERT_EQ(write(go[1], "g", 1), 1);
  pollfd fired{crossing->get(), POLLIN, 0};
  EXPECT_EQ(poll(&fired, 1, 10000), 1) << "the 64 MiB threshold never fired";
  auto mem = read_cgroup_memory(cg);
  ASSERT_TRUE(mem);
  EXPECT_GE(mem->usage, 64u << 20);
  EXPECT_EQ(mem->limit, 256u << 20);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(go[0]);
  close(go[1]);
  for (int i = 0; i < 50 && rmdir(dir.c_str()) != 0; ++i) usleep(100000);
}

}  // namespace
}  // namespace mlos::os
