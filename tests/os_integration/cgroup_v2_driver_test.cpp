// SPDX-License-Identifier: Apache-2.0
// The cgroup v2 driver on a real unified hierarchy: limits land in
// cgroupfs and the kernel enforces them, controllers are delegated top-down
// and a parent holding processes is refused with the reason, released
// processes leave the job's cgroup, and a per-job PSI trigger on
// memory.pressure fires for real (with a sub-2 s window where the process
// has CAP_SYS_RESOURCE). Skipped where the machine uses v1 (the
// development machines); run in the VM test bed (tests/vm), whose guest is
// cgroup v2 only.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "integration/proc_observer.h"
#include "os_integration/memory_toucher.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/memory_sources.h"

using namespace mlos_test;
using mlos::CpuSet;

namespace {

const std::string kRoot = "/sys/fs/cgroup";

struct V2 {
  std::unique_ptr<mlos::os::CgroupDriver> driver;
  std::string skip;
};

V2 v2_driver(const std::string& base) {
  auto d = mlos::os::detect_cgroup_driver("/proc/self/mountinfo", base);
  if (!d) return {nullptr, d.error().describe()};
  if ((*d)->version() != "v2") return {nullptr, "this machine uses cgroup " + (*d)->version() + " (tests/vm runs v2)"};
  if (access((kRoot + "/cgroup.subtree_control").c_str(), W_OK) != 0) return {nullptr, "cgroup v2 root not writable"};
  return {std::move(d.value()), ""};
}

// Removes what a test left in the hierarchy even when it failed half-way:
// kills its child, then every cgroup under the base, deepest first.
struct CgroupCleanup {
  std::string base;
  pid_t child = -1;
  ~CgroupCleanup() {
    if (child > 0) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    for (const char* leaf : {"job1", "released", "j", "psi"}) rmdir((kRoot + "/" + base + "/" + leaf).c_str());
    rmdir((kRoot + "/" + base).c_str());
  }
};

std::string pid_path(pid_t pid, const char* file) { return "/proc/" + std::to_string(pid) + "/" + file; }

}  // namespace

TEST(CgroupV2Driver, LimitsLandInCgroupfsAndTheKernelEnforcesThem) {
  const std::string base = "mlos-test-v2-" + std::to_string(getpid());
  V2 v2 = v2_driver(base);
  if (!v2.driver) GTEST_SKIP() << v2.skip;
  CgroupCleanup cleanup{base};
  auto& d = *v2.driver;
  const int cpu = allowed_cpu_count() - 1;

  ASSERT_TRUE(d.create("job1").ok());
  ASSERT_TRUE(d.create("job1").ok());  // idempotent
  // Delegation top-down: the root and the base enable what jobs need.
  for (const std::string& dir : {kRoot, kRoot + "/" + base}) {
    const std::string on = read_text(dir + "/cgroup.subtree_control");
    for (const char* c : {"cpuset", "cpu", "memory"}) EXPECT_NE(on.find(c), std::string::npos) << dir << ": " << on;
  }
  mlos::os::CgroupLimits limits;
  limits.cpus = CpuSet::of({cpu});
  limits.mems = CpuSet::of({0});
  limits.cpu_weight = 200;
  limits.memory_max = 512ull << 20;
  limits.memory_high = 256ull << 20;
  limits.memory_low = 64ull << 20;
  std::vector<std::string> unsupported;
  auto applied = d.apply("job1", limits, &unsupported);
  ASSERT_TRUE(applied.ok()) << applied.error().describe();
  EXPECT_TRUE(unsupported.empty());  // v2 expresses every limit

  const std::string job = kRoot + "/" + base + "/job1";
  EXPECT_EQ(read_text(job + "/cpuset.cpus"), std::to_string(cpu) + "\n");
  EXPECT_EQ(read_text(job + "/cpuset.mems"), "0\n");
  EXPECT_EQ(read_text(job + "/cpu.weight"), "200\n");
  EXPECT_EQ(read_text(job + "/memory.max"), std::to_string(512ull << 20) + "\n");
  EXPECT_EQ(read_text(job + "/memory.high"), std::to_string(256ull << 20) + "\n");
  EXPECT_EQ(read_text(job + "/memory.low"), std::to_string(64ull << 20) + "\n");
  ASSERT_TRUE(d.set_cpu_weight("job1", 400).ok());
  EXPECT_EQ(read_text(job + "/cpu.weight"), "400\n");

  int go[2], done[2];
  pid_t pid = toucher(8 << 20, go, done);
  ASSERT_GT(pid, 0);
  cleanup.child = pid;
  const std::string origin = read_text(pid_path(pid, "cgroup"));  // "0::/PATH\n", this test's own
  ASSERT_TRUE(d.attach("job1", pid).ok());
  char ack;
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ASSERT_EQ(read(done[0], &ack, 1), 1);
  EXPECT_EQ(*d.processes("job1"), std::vector<pid_t>({pid}));
  EXPECT_EQ(read_text(pid_path(pid, "cgroup")), "0::/" + base + "/job1\n");
  EXPECT_EQ(status_field(read_text(pid_path(pid, "status")), "Cpus_allowed_list"), std::to_string(cpu));
  auto usage = d.usage("job1");
  ASSERT_TRUE(usage.ok());
  EXPECT_GE(usage->memory_bytes.value_or(0), uint64_t{8} << 20) << read_text(job + "/memory.stat");  // charged after the move
  EXPECT_TRUE(usage->cpu_usage_ns.has_value());
  EXPECT_TRUE(usage->memory_stall_us.has_value());  // per-cgroup PSI: v2 only
  EXPECT_EQ(*d.jobs(), std::vector<std::string>({"job1"}));

  auto busy = d.remove("job1");
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().sys_errno, EBUSY);
  // Released: the process goes back to the cgroup it came from; with no
  // origin known, to a leaf of the base, never the base itself (no
  // internal processes). It keeps running either way.
  ASSERT_EQ(origin.rfind("0::/", 0), 0u) << origin;
  ASSERT_TRUE(d.detach("job1", origin.substr(3, origin.size() - 4)).ok());
  EXPECT_EQ(read_text(pid_path(pid, "cgroup")), origin);
  ASSERT_TRUE(d.attach("job1", pid).ok());
  ASSERT_TRUE(d.detach("job1", "").ok());
  EXPECT_EQ(read_text(pid_path(pid, "cgroup")), "0::/" + base + "/released\n");
  EXPECT_TRUE(d.remove("job1").ok());
  EXPECT_FALSE(std::ifstream(job + "/cpuset.cpus").good());
}

TEST(CgroupV2Driver, AParentHoldingProcessesIsRefusedWithTheReasonAndBadInputChangesNothing) {
  const std::string base = "mlos-test-v2-bad-" + std::to_string(getpid());
  CgroupCleanup cleanup{base};
  {
    V2 probe = v2_driver(base);
    if (!probe.driver) GTEST_SKIP() << probe.skip;
  }
  // A base that already holds a process cannot delegate controllers to
  // children: the kernel says EBUSY, the driver says why in words.
  ASSERT_EQ(mkdir((kRoot + "/" + base).c_str(), 0755), 0);
  int go[2], done[2];
  pid_t pid = toucher(4096, go, done);
  ASSERT_GT(pid, 0);
  cleanup.child = pid;
  std::ofstream(kRoot + "/" + base + "/cgroup.procs") << pid;
  ASSERT_EQ(read_text(pid_path(pid, "cgroup")), "0::/" + base + "\n");
  auto d = v2_driver(base);
  auto refused = d.driver->create("j");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(refused.error().message.find("no internal processes"), std::string::npos) << refused.error().message;
  EXPECT_FALSE(std::ifstream(kRoot + "/" + base + "/j/cgroup.procs").good());
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  cleanup.child = -1;

  EXPECT_EQ(d.driver->create("../escape").error().code, MLOS_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(d.driver->create("j").ok());
  EXPECT_EQ(d.driver->attach("j", 0).error().code, MLOS_ERR_INVALID_ARGUMENT);  // "0" would move us
  EXPECT_EQ(read_text(kRoot + "/" + base + "/j/cgroup.procs"), "");
  mlos::os::CgroupLimits empty;
  EXPECT_EQ(d.driver->apply("j", empty, nullptr).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(d.driver->set_cpu_weight("j", 0).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(read_text(kRoot + "/" + base + "/j/cpu.weight"), "100\n");  // unchanged
  EXPECT_TRUE(d.driver->remove("j").ok());
}

TEST(CgroupV2Driver, APsiTriggerOnTheJobsMemoryPressureFires) {
  const std::string base = "mlos-test-v2-psi-" + std::to_string(getpid());
  V2 v2 = v2_driver(base);
  if (!v2.driver) GTEST_SKIP() << v2.skip;
  CgroupCleanup cleanup{base};
  auto& d = *v2.driver;
  ASSERT_TRUE(d.create("psi").ok());
  // 64 MiB of anonymous memory (no swap) over a 16 MiB memory.high: the
  // kernel throttles the job on every allocation and counts it as a stall.
  mlos::os::CgroupLimits limits;
  limits.cpus = CpuSet::of({0});
  limits.mems = CpuSet::of({0});
  limits.memory_max = 256ull << 20;
  limits.memory_high = 16ull << 20;
  ASSERT_TRUE(d.apply("psi", limits, nullptr).ok());

  // 50 ms of stall in a 500 ms window: only a process with
  // CAP_SYS_RESOURCE may ask for a window under 2 s.
  std::string note;
  auto trigger = d.memory_pressure_trigger("psi", "some", 50000, 500000, &note);
  ASSERT_TRUE(trigger.ok()) << trigger.error().describe();
  if (has_cap_sys_resource()) {
    EXPECT_TRUE(note.empty()) << note;
  } else {
    EXPECT_NE(note.find("2000 ms"), std::string::npos) << note;
  }
  pollfd idle{trigger->get(), POLLPRI, 0};
  EXPECT_EQ(poll(&idle, 1, 0), 0);  // nothing in the job yet

  int go[2], done[2];
  pid_t pid = toucher(64 << 20, go, done, /*forever=*/true);
  ASSERT_GT(pid, 0);
  cleanup.child = pid;
  ASSERT_TRUE(d.attach("psi", pid).ok());
  ASSERT_EQ(write(go[1], "g", 1), 1);
  // Generous: the event needs the stall, not a deadline (a busy machine
  // only makes it come sooner).
  pollfd fired{trigger->get(), POLLPRI, 0};
  ASSERT_EQ(poll(&fired, 1, 60000), 1) << read_text(kRoot + "/" + base + "/psi/memory.pressure");
  EXPECT_TRUE(fired.revents & POLLPRI);
  EXPECT_GT(d.usage("psi")->memory_stall_us.value_or(0), 0u);
}
