/* SPDX-License-Identifier: Apache-2.0 */
// The cluster-level identity of a job, read from the cgroup its owner came
// from: the Kubernetes pod UID (kubelet's cgroupfs and systemd layouts) and
// the Slurm job id (slurmd's v1 and v2 layouts). Shown as labels of
// mlos_job_info, so a job's series join with kube-state-metrics' or
// Slurm's.
#pragma once

#include <string>

namespace mlos::daemon {

struct ClusterIds {
  std::string pod_uid;       // "" when not in a pod
  std::string slurm_job_id;  // "" when not in a Slurm job
};

// `cgroup`: a path as /proc/<pid>/cgroup names it, e.g.
//   /kubepods/burstable/pod1b2c.../<container>                         (cgroupfs)
//   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c_....slice/...  (systemd: '_' for '-')
//   /slurm/uid_1000/job_42/step_0                                      (v1)
//   /system.slice/slurmstepd.scope/job_42/step_0                       (v2)
ClusterIds cluster_ids_of(const std::string& cgroup);

}  // namespace mlos::daemon
