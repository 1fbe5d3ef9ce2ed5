// SPDX-License-Identifier: Apache-2.0
// The cgroup v1 driver on this machine's real hierarchy: limits land in
// cgroupfs, an attached process is confined by the kernel to the cgroup's
// CPUs, and removal fails while a process is inside. Skipped where the
// machine does not use v1 or the hierarchy is not writable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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
    for (const char* h : {"cpuset", "cpu", "memory", "cpuacct", "devices"}) {
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

// The errno open(2) gives a child in job `job` for each path.
std::vector<int> open_errnos_in(mlos::os::CgroupDriver& d, const std::string& job, const std::vector<std::string>& paths,
                                pid_t* child) {
  int go[2], out[2];
  if (pipe(go) != 0 || pipe(out) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    for (const auto& p : paths) {
      const int fd = open(p.c_str(), O_RDWR | O_CLOEXEC);
      const int e = fd >= 0 ? 0 : errno;
      if (write(out[1], &e, sizeof e) != sizeof e) _exit(1);
    }
    _exit(0);
  }
  *child = pid;
  std::vector<int> errnos;
  if (d.attach(job, pid).ok() && write(go[1], "g", 1) == 1) {
    for (size_t i = 0; i < paths.size(); ++i) {
      int e = -1;
      if (read(out[0], &e, sizeof e) != sizeof e) break;
      errnos.push_back(e);
    }
  }
  for (int fd : {go[0], go[1], out[0], out[1]}) close(fd);
  return errnos;
}

TEST(CgroupV1Driver, AGpuDeviceRuleKeepsTheJobOffOtherGpusDeviceFiles) {
  const std::string base = "mlos-test-gpu-" + std::to_string(getpid());
  V1 v1 = v1_driver(base);
  if (!v1.driver) GTEST_SKIP() << v1.skip;
  if (access("/sys/fs/cgroup/devices", W_OK) != 0) GTEST_SKIP() << "the v1 devices controller is not mounted writable";
  CgroupCleanup cleanup{base};
  auto& d = *v1.driver;
  // Device files of GPUs 0 and 1 (character 195:0 and 195:1): without a
  // driver, an open the cgroup lets through fails with ENXIO, one it stops
  // with EPERM.
  char dir[] = "/tmp/mlos-gpu-devices-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string gpu0 = std::string(dir) + "/nvidia0", gpu1 = std::string(dir) + "/nvidia1";
  ASSERT_EQ(mknod(gpu0.c_str(), S_IFCHR | 0600, makedev(mlos::os::kNvidiaGpuMajor, 0)), 0) << strerror(errno);
  ASSERT_EQ(mknod(gpu1.c_str(), S_IFCHR | 0600, makedev(mlos::os::kNvidiaGpuMajor, 1)), 0) << strerror(errno);

  ASSERT_TRUE(d.create("j").ok());
  mlos::os::CgroupLimits limits;
  limits.cpus = CpuSet::of({0});
  limits.mems = CpuSet::of({0});
  limits.gpu_devices = mlos::os::GpuDeviceRule{{0}, {1}};
  std::vector<std::string> unsupported;
  auto applied = d.apply("j", limits, &unsupported);
  ASSERT_TRUE(applied.ok()) << applied.error().describe();
  EXPECT_TRUE(unsupported.empty());
  pid_t child = -1;
  std::vector<int> errnos = open_errnos_in(d, "j", {gpu0, gpu1}, &child);
  cleanup.child = child;
  EXPECT_EQ(errnos, std::vector<int>({ENXIO, EPERM}));
  waitpid(child, nullptr, 0);
  cleanup.child = -1;

  // The rule re-applied the other way round opens GPU 1 and closes GPU 0.
  limits.gpu_devices = mlos::os::GpuDeviceRule{{1}, {0}};
  ASSERT_TRUE(d.apply("j", limits, &unsupported).ok());
  errnos = open_errnos_in(d, "j", {gpu0, gpu1}, &child);
  cleanup.child = child;
  EXPECT_EQ(errnos, std::vector<int>({EPERM, ENXIO}));
  waitpid(child, nullptr, 0);
  cleanup.child = -1;
  EXPECT_TRUE(d.remove("j").ok());
  unlink(gpu0.c_str());
  unlink(gpu1.c_str());
  rmdir(dir);
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
