// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_cgroups.h"

#include <algorithm>
#include <set>
#include <vector>

namespace mlos::daemon {

std::optional<os::GpuDeviceRule> JobCgroups::gpu_device_rule(const LiveJob& j) const {
  // The GPUs the cgroup's processes hold: the job's and its guests' (its
  // nested jobs take theirs from it).
  std::set<std::string> mine(j.record.gpus.begin(), j.record.gpus.end());
  for (uint64_t id : book_.guests_of(j.record.id)) {
    mine.insert(jobs_.at(id).record.gpus.begin(), jobs_.at(id).record.gpus.end());
  }
  // A job without GPU claims is left as it is (it never asked mlOS for
  // any); one with claims opens only those.
  if (mine.empty()) return std::nullopt;
  os::GpuDeviceRule rule;
  for (const auto& g : topology_.gpus) {
    if (g.uuid.empty()) continue;
    if (g.minor < 0) return std::nullopt;  // a GPU whose device file is unknown: no rule rather than a wrong one
    (mine.count(g.uuid) ? rule.allowed : rule.denied).push_back(g.minor);
  }
  return rule;
}

os::CgroupLimits JobCgroups::limits_for(const LiveJob& j) const {
  os::CgroupLimits l;
  l.cpus = j.record.cpus;
  l.mems = j.record.mems;
  const Steering steer = steering(j);
  l.cpu_weight = steer.weight;
  // A host's cgroup holds its process for its guests too: their CPUs and
  // nodes, and their memory (no limit if any of them has none).
  uint64_t memory = j.record.memory_bytes;
  for (uint64_t id : book_.guests_of(j.record.id)) {
    const JobRecord& guest = jobs_.at(id).record;
    l.cpus = l.cpus | guest.cpus;
    l.mems = l.mems | guest.mems;
    memory = memory == 0 || guest.memory_bytes == 0 ? 0 : memory + guest.memory_bytes;
  }
  if (memory > 0) {
    // The request is the hard limit; reclaim pressure starts at 90% of it,
    // so a job feels throttling before the OOM killer.
    l.memory_max = memory;
    l.memory_high = memory / 10 * 9;
    if (steer.checkpoint) l.memory_low = memory;
  }
  l.gpu_devices = gpu_device_rule(j);
  // A policy's memory settings stand for these, within the hard limit
  // (checked when the policy asked: apply_policy_action).
  const policy::PolicyEffects& set = j.policy.effects();
  if (set.memory_high.value) l.memory_high = *set.memory_high.value;
  if (set.memory_low.value) l.memory_low = *set.memory_low.value;
  return l;
}

void JobCgroups::apply(LiveJob& j, bool create) {
  // Nested jobs and guests live in another job's cgroup.
  if (!driver_ || j.record.parent != 0 || j.record.host != 0) return;
  const std::string name = j.record.cgroup();
  if (j.record.stays_in_origin) {
    // No cgroup of mlosd's: weight stays 0, so nothing moves the owner and
    // no phase rewrites a weight.
    j.note_once("cgroup: stays in " + j.record.origin_cgroup +
              " (another manager's, stay_in_cgroups): no cgroup of mlosd's, no CPU weight or memory limits from "
              "mlosd; its CPUs are set through thread affinity");
    return;
  }
  if (create) {
    if (Status s = driver_->create(name); !s) {
      j.note_once("cgroup: could not create " + name + ": " + s.error().describe());
      return;
    }
  }
  const os::CgroupLimits limits = limits_for(j);
  std::vector<std::string> unsupported;
  if (Status s = driver_->apply(name, limits, &unsupported); !s) {
    j.note_once("cgroup: could not apply limits to " + name + ": " + s.error().describe());
    return;
  }
  for (const auto& u : unsupported) j.note_once("cgroup: " + u);
  j.weight = limits.cpu_weight;
  j.protected_memory = limits.memory_low.has_value();
}

JobCgroups::Steering JobCgroups::steering(const LiveJob& j) const {
  // Its own phase, if it marked one, and its nested jobs' (recursively):
  // the cgroup gets the largest weight any of them asks for, and memory
  // protection while any of them checkpoints. FORWARD (normal) if none is
  // marked, so an unmarked job is never penalised.
  Steering st;
  bool any = false;
  std::vector<const LiveJob*> todo{&j};
  for (size_t i = 0; i < todo.size() && i < 4096; ++i) {
    const LiveJob& x = *todo[i];
    if (const auto& weight = x.policy.effects().cpu_weight; weight.value) {
      // A policy (phase-weights by default) decides this job's weight; the
      // phase table below is the fallback when none does.
      st.weight = std::max(st.weight, *weight.value);
      any = true;
    } else if (x.marked) {
      st.weight = std::max(st.weight, weights_.weight(x.phase, x.record.priority));
      any = true;
    }
    if (x.marked) st.checkpoint = st.checkpoint || x.phase == MLOS_TRAINING_PHASE_CHECKPOINT;
    for (uint64_t id : book_.nested_in(x.record.id)) todo.push_back(&jobs_.at(id));
  }
  if (!any) st.weight = weights_.weight(MLOS_TRAINING_PHASE_FORWARD, j.record.priority);
  return st;
}

void JobCgroups::refresh(LiveJob& j) {
  if (!driver_ || j.weight == 0) return;
  const os::CgroupLimits want = limits_for(j);
  if (want.memory_low.has_value() != j.protected_memory) {
    apply(j, false);
  } else if (want.cpu_weight != j.weight) {
    if (Status s = driver_->set_cpu_weight(j.record.cgroup(), want.cpu_weight); s) {
      j.weight = want.cpu_weight;
    } else {
      apply(j, false);  // notes the failure if it persists
    }
  }
}

std::string JobCgroups::cgroup_of(const LiveJob& j) const {
  if (!driver_) return "";
  if (j.record.parent != 0 || j.record.host != 0) {
    // Nested in a nested job (`mlos run` inside `mlos run`): the outermost's.
    auto it = jobs_.find(j.record.parent != 0 ? j.record.parent : j.record.host);
    return it != jobs_.end() ? cgroup_of(it->second) : "";
  }
  return j.weight != 0 ? j.record.cgroup() : "";
}

}  // namespace mlos::daemon
