// SPDX-License-Identifier: Apache-2.0
// Finding the cgroup hierarchies in /proc/self/mountinfo, and job names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "os/cgroup/cgroup_driver.h"

namespace mlos::os {
namespace {

// As on the build machine: v1 controllers mounted separately, an empty
// cgroup2 mount beside them.
constexpr const char* kV1Mountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";

TEST(CgroupMountsTest, FindsSeparateV1ControllersAndTheUnifiedMount) {
  CgroupMounts m = parse_cgroup_mounts(kV1Mountinfo);
  EXPECT_EQ(m.cpu, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m.cpuacct, "/sys/fs/cgroup/cpuacct");
  EXPECT_EQ(m.cpuset, "/sys/fs/cgroup/cpuset");
  EXPECT_EQ(m.memory, "/sys/fs/cgroup/memory");  // optional fields before "-" skipped
  EXPECT_EQ(m.unified, "/sys/fs/cgroup/unified");
}

TEST(CgroupMountsTest, CoMountedControllersAndPureV2) {
  CgroupMounts co = parse_cgroup_mounts("30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
  EXPECT_EQ(co.cpu, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(co.cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(co.cpuset, "");
  CgroupMounts v2 = parse_cgroup_mounts(
      "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n");
  EXPECT_EQ(v2.unified, "/sys/fs/cgroup");
  EXPECT_EQ(v2.memory, "");
  EXPECT_EQ(parse_cgroup_mounts("garbage\n\n- -\n").unified, "");
}

TEST(CgroupMountsTest, JobNamesCannotEscapeTheBase) {
  for (const char* good : {"job-1", "a.b_C", "x"}) EXPECT_TRUE(validate_job_name(good).ok()) << good;
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "a/b", "../x", "a b", std::string(65, 'a')}) {
    EXPECT_EQ(validate_job_name(bad).error().code, MLOS_ERR_INVALID_ARGUMENT) << bad;
  }
}

}  // namespace
}  // namespace mlos::os
