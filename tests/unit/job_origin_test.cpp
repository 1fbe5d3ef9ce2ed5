// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_origin.h"

#include <gtest/gtest.h>

using mlos::CpuSet;
using mlos::daemon::cgroup_within;
using mlos::daemon::job_origin;

namespace {

const std::vector<std::string> kStayIn = {"kubepods.slice", "system.slice/slurmstepd.scope"};

std::optional<CpuSet> two_and_three(const std::string&) { return CpuSet::of({2, 3}); }

}  // namespace

TEST(CgroupWithin, MatchesWholeComponentsOnly) {
  EXPECT_TRUE(cgroup_within("/kubepods.slice", "kubepods.slice"));
  EXPECT_TRUE(cgroup_within("/kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope", "kubepods.slice"));
  EXPECT_TRUE(cgroup_within("/system.slice/slurmstepd.scope/job_7/step_0", "system.slice/slurmstepd.scope"));
  EXPECT_FALSE(cgroup_within("/kubepods.slicex", "kubepods.slice"));
  EXPECT_FALSE(cgroup_within("/system.slice", "system.slice/slurmstepd.scope"));
  EXPECT_FALSE(cgroup_within("kubepods.slice", "kubepods.slice"));  // not a /proc path
  EXPECT_FALSE(cgroup_within("/", "kubepods.slice"));
  EXPECT_FALSE(cgroup_within("/x", ""));
}

TEST(JobOrigin, APodOrSlurmStepIsBoundedAndStays) {
  auto pod = job_origin(std::string("/kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope"), "mlos", kStayIn,
                        two_and_three);
  EXPECT_EQ(pod.cgroup, "/kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope");
  EXPECT_EQ(pod.cpus, CpuSet::of({2, 3}));
  EXPECT_TRUE(pod.stays);
  EXPECT_TRUE(job_origin(std::string("/system.slice/slurmstepd.scope/job_7/step_0/user/task_0"), "mlos", kStayIn,
                         two_and_three)
                  .stays);
}

TEST(JobOrigin, OtherCgroupsAreBoundedButMove) {
  auto session = job_origin(std::string("/user.slice/user-0.slice/session-1.scope"), "mlos", kStayIn, two_and_three);
  EXPECT_EQ(session.cpus, CpuSet::of({2, 3}));
  EXPECT_FALSE(session.stays);
  auto root = job_origin(std::string("/"), "mlos", kStayIn, nullptr);
  EXPECT_EQ(root.cgroup, "/");
  EXPECT_FALSE(root.cpus.has_value());
}

TEST(JobOrigin, MlosdsOwnCgroupsAreNeitherBoundsNorStays) {
  // <base>/shared is the pool node confinement keeps unmanaged processes
  // in: bounding by it would hide CPUs the placement books anyway.
  auto shared = job_origin(std::string("/mlos/shared"), "mlos", {"mlos"}, two_and_three);
  EXPECT_EQ(shared.cgroup, "/mlos/shared");
  EXPECT_FALSE(shared.cpus.has_value());
  EXPECT_FALSE(shared.stays);
}

TEST(JobOrigin, UnknownOrMalformedIsEmpty) {
  for (const auto& c : {std::optional<std::string>(), std::optional<std::string>(""),
                        std::optional<std::string>("relative")}) {
    auto o = job_origin(c, "mlos", kStayIn, two_and_three);
    EXPECT_EQ(o.cgroup, "");
    EXPECT_FALSE(o.cpus.has_value());
    EXPECT_FALSE(o.stays);
  }
}
