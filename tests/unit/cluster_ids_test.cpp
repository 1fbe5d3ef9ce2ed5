// SPDX-License-Identifier: Apache-2.0
// cluster_ids_of: pod UIDs and Slurm job ids from the layouts kubelet and
// slurmd give their cgroups.
#include "daemon/cluster_ids.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

TEST(ClusterIdsTest, KubeletCgroupfsLayout) {
  const auto ids = cluster_ids_of("/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/abcdef0123");
  EXPECT_EQ(ids.pod_uid, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b");
  EXPECT_EQ(ids.slurm_job_id, "");
}

TEST(ClusterIdsTest, KubeletSystemdLayoutRestoresDashes) {
  const auto ids = cluster_ids_of(
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice/"
      "cri-containerd-0123.scope");
  EXPECT_EQ(ids.pod_uid, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b");
  // Guaranteed pods sit directly under kubepods.slice.
  EXPECT_EQ(cluster_ids_of("/kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice").pod_uid,
            "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b");
}

TEST(ClusterIdsTest, SlurmLayouts) {
  EXPECT_EQ(cluster_ids_of("/slurm/uid_1000/job_42/step_0").slurm_job_id, "42");
  EXPECT_EQ(cluster_ids_of("/system.slice/slurmstepd.scope/job_1234/step_batch/user/task_0").slurm_job_id, "1234");
}

TEST(ClusterIdsTest, OtherCgroupsHaveNone) {
  for (const char* path : {"/", "", "/user.slice/user-0.slice/session-1.scope", "/system.slice/podman.service",
                           "/mlos/job-7", "/kubepods/burstable/podnot-a-uid!", "/x/job_42"}) {
    const auto ids = cluster_ids_of(path);
    EXPECT_EQ(ids.pod_uid, "") << path;
    EXPECT_EQ(ids.slurm_job_id, "") << path;
  }
}

}  // namespace
}  // namespace mlos::daemon
