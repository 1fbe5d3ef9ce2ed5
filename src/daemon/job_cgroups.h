/* SPDX-License-Identifier: Apache-2.0 */
// Jobs' cgroups as mlosd realises them: one per job of the node (nested
// jobs and guests live in their envelope's or host's), created with the
// job's CPUs, memory nodes, memory limits and GPU devices, its CPU weight
// following the phases of the job and of the jobs nested in it (or what
// its policies set), widened for its guests. A limit the driver cannot
// apply becomes a note on the job, once.
//
// Reads the book and the jobs JobManager owns; changes only the cgroups
// and the applied settings of the job it is given.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/phase_weights.h"
#include "core/topology.h"
#include "daemon/job_book.h"
#include "daemon/live_job.h"
#include "os/cgroup/cgroup_driver.h"

namespace mlos::daemon {

class JobCgroups {
 public:
  using Jobs = std::map<uint64_t, LiveJob>;

  // `driver` null: no cgroups (mlosd --cgroups none); every call is a no-op.
  JobCgroups(std::shared_ptr<os::CgroupDriver> driver, const Topology& topology, const PhaseWeights& weights,
             const JobBook& book, const Jobs& jobs)
      : driver_(std::move(driver)), topology_(topology), weights_(weights), book_(book), jobs_(jobs) {}

  bool enabled() const { return driver_ != nullptr; }
  os::CgroupDriver* driver() const { return driver_.get(); }

  // Creates (`create`) or updates the cgroup of `job`, a job of the node
  // with a cgroup of its own; records the weight and protection applied.
  void apply(LiveJob& job, bool create);
  // Rewrites the job's weight (and memory protection) if what steers it
  // changed; cheap when nothing did.
  void refresh(LiveJob& job);
  // What the job's cgroup is given now.
  os::CgroupLimits limits_for(const LiveJob& job) const;
  // The cgroup the job's process is in: its own, or its envelope's or
  // host's ("" without one).
  std::string cgroup_of(const LiveJob& job) const;

 private:
  // What a job's cgroup follows: the phases of the job and of the jobs
  // nested in it.
  struct Steering {
    uint32_t weight = 0;
    bool checkpoint = false;
  };
  Steering steering(const LiveJob& job) const;
  // Which GPU device files the cgroup of `job` may open; nullopt: no rule
  // (no GPU claims, or a GPU's minor number unknown).
  std::optional<os::GpuDeviceRule> gpu_device_rule(const LiveJob& job) const;

  std::shared_ptr<os::CgroupDriver> driver_;
  const Topology& topology_;
  const PhaseWeights& weights_;
  const JobBook& book_;
  const Jobs& jobs_;
};

}  // namespace mlos::daemon
