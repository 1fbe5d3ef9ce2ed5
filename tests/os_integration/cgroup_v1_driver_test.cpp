// SPDX-License-Identifier: Apache-2.0
// The cgroup v1 driver on this machine's real hierarchy: limits land in
// cgroupfs, an attached process is confined by the kernel to the cgroup's
// CPUs, and removal fails while a process is inside. Skipped where the
// machine does not use v1 or the hierarchy is not writable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "integration/proc_observer.h"
#include "os_integration/memory_toucher.h"
#include "os/cgroup/cgroup_driver.h"

using namespace mlos_test;
using mlos::CpuSet;

namespace {

struct V1 {
  std::unique_ptr<mlos::os::CgroupDriver> driver;
  std::string skip;
};

V1 v1_driver(const std::string& base) {
  auto d = mlos::os::detect_cgroup_driver("/proc/self/mountinfo", base);
  if (!d) return {nullptr, d.error().describe()};
  if ((*d)->version() != "v1") return {nullptr, "this machine uses cgroup " + (*d)->version()};
  if (access("/sys/fs/cgroup/cpuset", W_OK) != 0) return {nullptr, "cgroup v1 hierarchy not writable"};
  return {std::move(d.value()), ""};
}

// Removes what a test left in the real hierarchy, even when it failed
// half-way: kills its child, then the job cgroups and the base.
struct CgroupCleanup {
  std::string base;
  pid_t child = -1;
  ~CgroupCleanup() {
    if (child > 0) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    for (const char* h : {"cpuset", "cpu", "memory", "cpuacct"}) {
      const std::string dir = "/sys/fs/cgroup/" + std::string(h) + "/" + base;
      for (const char* job : {"job1", "j"}) rmdir((dir + "/" + job).c_str());
      rmdir(dir.c_str());
    }
  }
};

}  // namespace

TEST(CgroupV1Driver, LimitsLandInCgroupfsAndTheKernelEnforcesTheCpuset) {
  const std::string base = "mlos-test-" + std::to_string(getpid());
  V1 v1 = v1_driver(base);
  if (!v1.driver) GTEST_SKIP() << v1.skip;
  CgroupCleanup cleanup{base};
  auto& d = *v1.driver;
  const int cpu = allowed_cpu_count() - 1;

  ASSERT_TRUE(d.create("job1").ok());
  ASSERT_TRUE(d.create("job1").ok());  // idempotent
  mlos::os::CgroupLimits limits;
  limits.cpus = CpuSet::of({cpu});
  limits.mems = CpuSet::of({0});
  limits.cpu_weight = 200;
  limits.memory_max = 512ull << 20;
  limits.memory_low = 64ull << 20;
  std::vector<std::string> unsupported;
  auto applied = d.apply("job1", limits, &unsupported);
  ASSERT_TRUE(applied.ok()) << applied.error().describe();
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_NE(unsupported[0].find("memory_low"), std::string::npos);

  const std::string job = "/" + base + "/job1";
  EXPECT_EQ(read_text("/sys/fs/cgroup/cpuset" + job + "/cpuset.cpus"), std::to_string(cpu) + "\n");
  EXPECT_EQ(read_text("/sys/fs/cgroup/cpuset" + job + "/cpuset.mems"), "0\n");
  EXPECT_EQ(read_text("/sys/fs/cgroup/cpu" + job + "/cpu.shares"), "2048\n");
  EXPECT_EQ(read_text("/sys/fs/cgroup/memory" + job + "/memory.limit_in_bytes"), std::to_string(512ull << 20) + "\n");

  int go[2], done[2];
  pid_t pid = toucher(8 << 20, go, done);
  ASSERT_GT(pid, 0);
  cleanup.child = pid;
  ASSERT_TRUE(d.attach("job1", pid).ok());
  char ack;
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ASSERT_EQ(read(done[0], &ack, 1), 1);
  auto procs = d.processes("job1");
  ASSERT_TRUE(procs.ok());
  EXPECT_EQ(*procs, std::vector<pid_t>({pid}));
  const std::string cgroups = read_text("/proc/" + std::to_string(pid) + "/cgroup");
  EXPECT_NE(cgroups.find(":cpuset:" + job + "\n"), std::string::npos) << cgroups;
  EXPECT_NE(cgroups.find(":memory:" + job + "\n"), std::string::npos) << cgroups;
  EXPECT_EQ(status_field(read_text("/proc/" + std::to_string(pid) + "/status"), "Cpus_allowed_list"),
            std::to_string(cpu));
  auto usage = d.usage("job1");
  ASSERT_TRUE(usage.ok());
  EXPECT_GE(usage->memory_bytes.value_or(0), uint64_t{8} << 20);  // charged after the move

  auto jobs = d.jobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(*jobs, std::vector<std::string>({"job1"}));

  auto busy = d.remove("job1");
  EXPECT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().sys_errno, EBUSY);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  cleanup.child = -1;
  EXPECT_TRUE(d.remove("job1").ok());
  EXPECT_FALSE(std::ifstream("/sys/fs/cgroup/cpuset" + job + "/cpuset.cpus").good());
}

TEST(CgroupV1Driver, BadInputChangesNothing) {
  const std::string base = "mlos-test-bad-" + std::to_string(getpid());
  V1 v1 = v1_driver(base);
  if (!v1.driver) GTEST_SKIP() << v1.skip;
  CgroupCleanup cleanup{base};
  EXPECT_EQ(v1.driver->create("../escape").error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(std::ifstream("/sys/fs/cgroup/cpuset/" + base + "/cpuset.cpus").good());
  ASSERT_TRUE(v1.driver->create("j").ok());
  EXPECT_EQ(v1.driver->attach("j", 0).error().code, MLOS_ERR_INVALID_ARGUMENT);  // "0" would move us
  EXPECT_EQ(read_text("/sys/fs/cgroup/cpuset/" + base + "/j/cgroup.procs"), "");
  mlos::os::CgroupLimits empty;
  EXPECT_EQ(v1.driver->apply("j", empty, nullptr).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(read_text("/sys/fs/cgroup/cpuset/" + base + "/j/cpuset.cpus"), "\n");  // still unset
  EXPECT_TRUE(v1.driver->remove("j").ok());
}
