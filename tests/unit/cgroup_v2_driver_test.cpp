// SPDX-License-Identifier: Apache-2.0
// The cgroup v2 driver against an in-memory cgroup2 that enforces the
// kernel's rules (tests/fakes/fake_cgroup_v2_fs.h), and checks of that model.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fakes/fake_cgroup_v2_fs.h"
#include "os/cgroup/cgroup_driver.h"

namespace mlos::os {
namespace {

using mlos_test::FakeCgroupV2Fs;
using Writes = std::vector<std::pair<std::string, std::string>>;

class CgroupV2DriverTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeCgroupV2Fs> fs_ =
      std::make_shared<FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "io", "memory"});
  std::unique_ptr<CgroupDriver> driver_ = make_cgroup_v2_driver(fs_);

  static CgroupLimits limits() {
    CgroupLimits l;
    l.cpus = CpuSet::parse_list("0-3,8").value();
    l.mems = CpuSet::of({0});
    l.cpu_weight = 250;
    return l;
  }
};

TEST_F(CgroupV2DriverTest, VersionIsV2) { EXPECT_EQ(driver_->version(), "v2"); }

TEST_F(CgroupV2DriverTest, CreateEnablesControllersTopDownThenMakesTheJob) {
  ASSERT_TRUE(driver_->create("train"));
  EXPECT_EQ(fs_->writes(), (Writes{{"cgroup.subtree_control", "+cpuset +cpu +memory"},
                                   {"mlos/cgroup.subtree_control", "+cpuset +cpu +memory"}}));
  EXPECT_EQ(fs_->file("cgroup.subtree_control"), "cpuset cpu memory");
  EXPECT_EQ(fs_->file("mlos/cgroup.subtree_control"), "cpuset cpu memory");
  EXPECT_EQ(fs_->file("mlos/train/cgroup.controllers"), "cpuset cpu memory");
  EXPECT_EQ(fs_->file("mlos/train/cgroup.subtree_control"), "");
  EXPECT_EQ(fs_->file("mlos/train/memory.max"), "max");
  EXPECT_EQ(fs_->file("mlos/train/cpu.weight"), "100");
  EXPECT_EQ(fs_->file("mlos/cgroup.procs"), "");
}

TEST_F(CgroupV2DriverTest, CreateAddsOnlyControllersNotYetEnabled) {
  ASSERT_TRUE(fs_->write("cgroup.subtree_control", "+io +cpu"));
  ASSERT_TRUE(driver_->create("train"));
  EXPECT_EQ(fs_->writes(), (Writes{{"cgroup.subtree_control", "+io +cpu"},
                                   {"cgroup.subtree_control", "+cpuset +memory"},
                                   {"mlos/cgroup.subtree_control", "+cpuset +cpu +memory"}}));
  EXPECT_EQ(fs_->file("cgroup.subtree_control"), "cpuset cpu io memory");
  EXPECT_EQ(fs_->file("mlos/cgroup.controllers"), "cpuset cpu io memory");
}

TEST_F(CgroupV2DriverTest, CreateIsIdempotent) {
  ASSERT_TRUE(driver_->create("train"));
  const size_t after_first = fs_->writes().size();
  ASSERT_TRUE(driver_->create("train"));
  EXPECT_EQ(fs_->writes().size(), after_first);
  auto jobs = driver_->jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(*jobs, std::vector<std::string>{"train"});
}

TEST_F(CgroupV2DriverTest, CustomBase) {
  auto driver = make_cgroup_v2_driver(fs_, "svc");
  ASSERT_TRUE(driver->create("j1"));
  EXPECT_TRUE(fs_->exists("svc/j1"));
  EXPECT_FALSE(fs_->exists("mlos"));
  EXPECT_EQ(fs_->file("svc/cgroup.subtree_control"), "cpuset cpu memory");
}

TEST_F(CgroupV2DriverTest, ApplyWritesExactValues) {
  ASSERT_TRUE(driver_->create("train"));
  CgroupLimits l = limits();
  l.memory_high = uint64_t{1} << 30;
  l.memory_low = uint64_t{512} << 20;
  std::vector<std::string> unsupported;
  const size_t before = fs_->writes().size();
  ASSERT_TRUE(driver_->apply("train", l, &unsupported));
  EXPECT_TRUE(unsupported.empty());
  EXPECT_EQ(Writes(fs_->writes().begin() + static_cast<long>(before), fs_->writes().end()),
            (Writes{{"mlos/train/cpuset.cpus", "0-3,8"},
                    {"mlos/train/cpuset.mems", "0"},
                    {"mlos/train/cpu.weight", "250"},
                    {"mlos/train/memory.max", "max"},
                    {"mlos/train/memory.high", "1073741824"},
                    {"mlos/train/memory.low", "536870912"}}));
  EXPECT_EQ(fs_->file("mlos/train/cpuset.cpus"), "0-3,8");
  EXPECT_EQ(fs_->file("mlos/train/cpuset.mems"), "0");
  EXPECT_EQ(fs_->file("mlos/train/cpu.weight"), "250");
  EXPECT_EQ(fs_->file("mlos/train/memory.max"), "max");
  EXPECT_EQ(fs_->file("mlos/train/memory.high"), "1073741824");
  EXPECT_EQ(fs_->file("mlos/train/memory.low"), "536870912");
}

TEST_F(CgroupV2DriverTest, ApplyWritesMemoryMaxWhenSetAndResetsUnsetLimits) {
  ASSERT_TRUE(driver_->create("train"));
  CgroupLimits l = limits();
  l.memory_max = uint64_t{2} << 30;
  l.memory_high = 4096;
  l.memory_low = 4096;
  ASSERT_TRUE(driver_->apply("train", l, nullptr));
  EXPECT_EQ(fs_->file("mlos/train/memory.max"), "2147483648");
  EXPECT_EQ(fs_->file("mlos/train/memory.high"), "4096");
  l.memory_max.reset();
  l.memory_high.reset();
  l.memory_low.reset();
  ASSERT_TRUE(driver_->apply("train", l, nullptr));
  EXPECT_EQ(fs_->file("mlos/train/memory.max"), "max");
  EXPECT_EQ(fs_->file("mlos/train/memory.high"), "max");
  EXPECT_EQ(fs_->file("mlos/train/memory.low"), "0");
}

TEST_F(CgroupV2DriverTest, ApplyRejectsEmptyCpusOrMemsAndWritesNothing) {
  ASSERT_TRUE(driver_->create("train"));
  const size_t before = fs_->writes().size();
  CgroupLimits no_cpus = limits();
  no_cpus.cpus = CpuSet();
  Status s = driver_->apply("train", no_cpus, nullptr);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  CgroupLimits no_mems = limits();
  no_mems.mems = CpuSet();
  s = driver_->apply("train", no_mems, nullptr);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fs_->writes().size(), before);
  EXPECT_EQ(fs_->file("mlos/train/cpuset.cpus"), "");
}

TEST_F(CgroupV2DriverTest, ApplyChecksTheWeightRange) {
  ASSERT_TRUE(driver_->create("train"));
  const size_t before = fs_->writes().size();
  for (uint32_t bad : {0u, 10001u}) {
    CgroupLimits l = limits();
    l.cpu_weight = bad;
    Status s = driver_->apply("train", l, nullptr);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT) << bad;
  }
  EXPECT_EQ(fs_->writes().size(), before);
  EXPECT_EQ(fs_->file("mlos/train/cpu.weight"), "100");
  for (uint32_t good : {1u, 10000u}) {
    CgroupLimits l = limits();
    l.cpu_weight = good;
    ASSERT_TRUE(driver_->apply("train", l, nullptr)) << good;
    EXPECT_EQ(fs_->file("mlos/train/cpu.weight"), std::to_string(good));
  }
}

TEST_F(CgroupV2DriverTest, AttachMovesThePidIntoTheJobNeverTheBase) {
  ASSERT_TRUE(driver_->create("train"));
  fs_->set_processes("", {4242, 4243});
  ASSERT_TRUE(driver_->attach("train", 4242));
  EXPECT_EQ(fs_->pid_location(4242), "mlos/train");
  EXPECT_EQ(fs_->pid_location(4243), "");
  ASSERT_TRUE(driver_->attach("train", 4243));
  EXPECT_EQ(fs_->pid_location(4243), "mlos/train");
  EXPECT_EQ(fs_->file("mlos/cgroup.procs"), "");
  EXPECT_EQ(fs_->file("cgroup.procs"), "");
  auto pids = driver_->processes("train");
  ASSERT_TRUE(pids);
  EXPECT_EQ(*pids, (std::vector<pid_t>{4242, 4243}));
}

TEST_F(CgroupV2DriverTest, AttachRefusesPidsThatWouldMoveTheCaller) {
  ASSERT_TRUE(driver_->create("train"));
  const size_t before = fs_->writes().size();
  for (pid_t bad : {0, -1}) {
    Status s = driver_->attach("train", bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT) << bad;
  }
  EXPECT_EQ(fs_->writes().size(), before);
  EXPECT_EQ(fs_->pid_location(fs_->writer_pid()), "");  // "0" would have moved the daemon itself
}

TEST_F(CgroupV2DriverTest, ProcessesOfAMissingJobFailsWithEnoent) {
  auto pids = driver_->processes("ghost");
  ASSERT_FALSE(pids);
  EXPECT_EQ(pids.error().sys_errno, ENOENT);
}

TEST_F(CgroupV2DriverTest, UsageReportsMemoryAndCpuNanoseconds) {
  ASSERT_TRUE(driver_->create("train"));
  fs_->set_memory_current("mlos/train", 123456789);
  fs_->set_cpu_usage_usec("mlos/train", 1500);
  auto u = driver_->usage("train");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->memory_bytes, std::optional<uint64_t>(123456789));
  EXPECT_EQ(u->cpu_usage_ns, std::optional<uint64_t>(1500000));
}

TEST_F(CgroupV2DriverTest, UsageReportsMemoryStallFromPsi) {
  ASSERT_TRUE(driver_->create("train"));
  fs_->set_memory_stall_usec("mlos/train", 2500000);
  auto u = driver_->usage("train");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->memory_stall_us, std::optional<uint64_t>(2500000));
}

TEST_F(CgroupV2DriverTest, SetCpuWeightWritesOnlyTheWeight) {
  ASSERT_TRUE(driver_->create("train"));
  const size_t before = fs_->writes().size();
  ASSERT_TRUE(driver_->set_cpu_weight("train", 250));
  EXPECT_EQ(fs_->file("mlos/train/cpu.weight"), "250");
  EXPECT_EQ(fs_->writes().size(), before + 1);
  EXPECT_EQ(driver_->set_cpu_weight("train", 0).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(driver_->set_cpu_weight("../x", 100).error().code, MLOS_ERR_INVALID_ARGUMENT);
}

TEST_F(CgroupV2DriverTest, RemoveIsBusyWhileAProcessIsInside) {
  ASSERT_TRUE(driver_->create("train"));
  fs_->set_processes("", {4242});
  ASSERT_TRUE(driver_->attach("train", 4242));
  Status s = driver_->remove("train");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EBUSY);
  EXPECT_TRUE(fs_->exists("mlos/train"));
  fs_->set_processes("mlos/train", {});  // it exits
  ASSERT_TRUE(driver_->remove("train"));
  EXPECT_FALSE(fs_->exists("mlos/train"));
  EXPECT_TRUE(fs_->exists("mlos"));
  EXPECT_TRUE(driver_->remove("train"));  // already gone: success
}

TEST_F(CgroupV2DriverTest, DetachSendsProcessesBackToTheirOriginWhileItTakesThem) {
  ASSERT_TRUE(fs_->make_dir("slurm"));
  ASSERT_TRUE(fs_->make_dir("slurm/step_0"));
  ASSERT_TRUE(driver_->create("train"));
  fs_->set_processes("slurm/step_0", {4242, 4243});
  ASSERT_TRUE(driver_->attach("train", 4242));
  ASSERT_TRUE(driver_->attach("train", 4243));
  ASSERT_TRUE(driver_->detach("train", "/slurm/step_0"));
  EXPECT_EQ(fs_->pid_location(4242), "slurm/step_0");
  EXPECT_EQ(fs_->pid_location(4243), "slurm/step_0");
  EXPECT_FALSE(fs_->exists("mlos/released"));
  // The root is an origin too ("/").
  ASSERT_TRUE(driver_->attach("train", 4242));
  ASSERT_TRUE(driver_->detach("train", "/"));
  EXPECT_EQ(fs_->pid_location(4242), "");
}

TEST_F(CgroupV2DriverTest, DetachFallsBackToTheReleasedLeafWhenTheOriginCannotTakeThem) {
  ASSERT_TRUE(driver_->create("train"));
  fs_->set_processes("", {4242});
  // Unknown, gone, malformed, or the job's own cgroup: the released leaf.
  for (const char* origin : {"", "/gone", "relative", "/a/../mlos", "/mlos/train", "/mlos/train/sub"}) {
    ASSERT_TRUE(driver_->attach("train", 4242)) << origin;
    ASSERT_TRUE(driver_->detach("train", origin)) << origin;
    EXPECT_EQ(fs_->pid_location(4242), "mlos/released") << origin;
  }
  // An origin that became an inner cgroup with controllers (no internal
  // processes): the kernel refuses, the leaf takes the process.
  ASSERT_TRUE(fs_->make_dir("inner"));
  ASSERT_TRUE(fs_->make_dir("inner/leaf"));
  ASSERT_TRUE(fs_->write("inner/cgroup.subtree_control", "+cpu"));
  ASSERT_TRUE(driver_->attach("train", 4242));
  ASSERT_TRUE(driver_->detach("train", "/inner"));
  EXPECT_EQ(fs_->pid_location(4242), "mlos/released");
}

TEST_F(CgroupV2DriverTest, JobsListsJobDirectories) {
  auto none = driver_->jobs();
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, std::vector<std::string>{});
  ASSERT_TRUE(driver_->create("b"));
  ASSERT_TRUE(driver_->create("a"));
  auto jobs = driver_->jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(*jobs, (std::vector<std::string>{"a", "b"}));
}

TEST_F(CgroupV2DriverTest, RootWithoutMemoryIsUnsupported) {
  auto fs = std::make_shared<FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "io"});
  auto driver = make_cgroup_v2_driver(fs);
  Status s = driver->create("train");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(s.error().message.find("memory"), std::string::npos) << s.error().message;
  EXPECT_EQ(fs->writes(), Writes{});
  EXPECT_FALSE(fs->exists("mlos"));
}

TEST_F(CgroupV2DriverTest, BaseWithAnInternalProcessIsUnsupported) {
  ASSERT_TRUE(fs_->make_dir("mlos"));
  fs_->set_processes("mlos", {77});
  Status s = driver_->create("train");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(s.error().message.find("internal processes"), std::string::npos) << s.error().message;
  EXPECT_FALSE(fs_->exists("mlos/train"));
  EXPECT_EQ(fs_->file("mlos/cgroup.subtree_control"), "");
  EXPECT_EQ(fs_->pid_location(77), "mlos");
}

TEST_F(CgroupV2DriverTest, InvalidJobNamesAreRejectedEverywhereAndTouchNothing) {
  const std::string names[] = {"", ".", "..", "a/b", "../x", std::string(65, 'a'), "sp ace"};
  for (const std::string& job : names) {
    std::vector<Status> statuses = {driver_->create(job), driver_->apply(job, limits(), nullptr),
                                    driver_->attach(job, 4242), driver_->remove(job)};
    for (const Status& s : statuses) {
      ASSERT_FALSE(s) << job;
      EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT) << job;
    }
    auto pids = driver_->processes(job);
    ASSERT_FALSE(pids) << job;
    EXPECT_EQ(pids.error().code, MLOS_ERR_INVALID_ARGUMENT) << job;
    auto u = driver_->usage(job);
    ASSERT_FALSE(u) << job;
    EXPECT_EQ(u.error().code, MLOS_ERR_INVALID_ARGUMENT) << job;
  }
  EXPECT_EQ(fs_->writes(), Writes{});
  EXPECT_FALSE(fs_->exists("mlos"));
  EXPECT_EQ(fs_->file("cgroup.subtree_control"), "");
  // 64 characters is the longest valid name.
  EXPECT_TRUE(driver_->create(std::string(64, 'a')));
}

// ---- the fake itself enforces the kernel's rules ----

TEST_F(CgroupV2DriverTest, FakeRefusesAPidInACgroupWithSubtreeControl) {
  ASSERT_TRUE(fs_->write("cgroup.subtree_control", "+memory"));
  ASSERT_TRUE(fs_->make_dir("a"));
  ASSERT_TRUE(fs_->make_dir("a/b"));
  ASSERT_TRUE(fs_->write("a/cgroup.subtree_control", "+memory"));
  Status s = fs_->write("cgroup.subtree_control", "-memory");  // a still enables it
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EBUSY);
  s = fs_->write("a/cgroup.procs", "5");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EBUSY);
  ASSERT_TRUE(fs_->write("a/b/cgroup.procs", "5"));
  EXPECT_EQ(fs_->pid_location(5), "a/b");
  ASSERT_TRUE(fs_->write("cgroup.procs", "5"));  // the root is exempt
  EXPECT_EQ(fs_->pid_location(5), "");
  EXPECT_EQ(fs_->file("a/b/cgroup.procs"), "");
}

TEST_F(CgroupV2DriverTest, FakeEnforcesTopDownEnabling) {
  ASSERT_TRUE(fs_->make_dir("a"));
  Status s = fs_->write("a/cgroup.subtree_control", "+cpu");  // not enabled in the root
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, ENOENT);
  auto fs = std::make_shared<FakeCgroupV2Fs>(std::vector<std::string>{"cpu"});
  s = fs->write("cgroup.subtree_control", "+memory");  // not offered by the root
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, ENOENT);
  s = fs->write("cgroup.subtree_control", "+bogus");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EINVAL);
  EXPECT_EQ(fs->file("cgroup.subtree_control"), "");
}

TEST_F(CgroupV2DriverTest, FakeRefusesEnablingInACgroupWithProcesses) {
  ASSERT_TRUE(fs_->write("cgroup.subtree_control", "+memory"));
  ASSERT_TRUE(fs_->make_dir("a"));
  ASSERT_TRUE(fs_->write("a/cgroup.procs", "9"));
  Status s = fs_->write("a/cgroup.subtree_control", "+memory");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EBUSY);
  EXPECT_EQ(fs_->file("a/cgroup.subtree_control"), "");
}

TEST_F(CgroupV2DriverTest, FakeShowsInterfaceFilesOnlyWhereTheControllerIsEnabled) {
  ASSERT_TRUE(fs_->make_dir("a"));
  EXPECT_FALSE(fs_->exists("a/memory.max"));
  Status s = fs_->write("a/memory.max", "100");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, ENOENT);
  ASSERT_TRUE(fs_->write("cgroup.subtree_control", "+memory +cpu"));
  EXPECT_EQ(fs_->file("a/memory.max"), "max");
  EXPECT_FALSE(fs_->exists("memory.max"));  // not on the root
  for (const char* bad : {"0", "10001", "x"}) {
    s = fs_->write("a/cpu.weight", bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().sys_errno, EINVAL) << bad;
  }
  ASSERT_TRUE(fs_->write("a/cpu.weight", "10000"));
  EXPECT_EQ(fs_->file("a/cpu.weight"), "10000");
  s = fs_->write("a/memory.current", "1");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EACCES);
  ASSERT_TRUE(fs_->write("cgroup.subtree_control", "-memory"));
  EXPECT_FALSE(fs_->exists("a/memory.max"));
}

TEST_F(CgroupV2DriverTest, FakeRmdirIsBusyWithChildrenOrProcesses) {
  ASSERT_TRUE(fs_->make_dir("a"));
  ASSERT_TRUE(fs_->make_dir("a/b"));
  Status s = fs_->remove_dir("a");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EBUSY);
  fs_->set_processes("a/b", {3});
  s = fs_->remove_dir("a/b");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, EBUSY);
  fs_->set_processes("a/b", {});
  EXPECT_TRUE(fs_->remove_dir("a/b"));
  EXPECT_TRUE(fs_->remove_dir("a"));
  EXPECT_TRUE(fs_->remove_dir("a"));  // missing is success
  EXPECT_FALSE(fs_->exists("a"));
  s = fs_->make_dir("x/y");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().sys_errno, ENOENT);
}

}  // namespace
}  // namespace mlos::os
