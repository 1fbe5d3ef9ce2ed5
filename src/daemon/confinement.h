/* SPDX-License-Identifier: Apache-2.0 */
// Exclusive that means exclusive: while exclusive jobs that confine others
// hold CPUs, every other process of the node is kept off them, as the
// kubelet's static CPU manager and Slurm do, through the cpuset hierarchy:
//
//  - mode "node" (default): processes in the hierarchy's root cgroup (every
//    unmanaged process on a machine without systemd; kernel threads stay)
//    move into <base>/shared, whose cpuset is the pool; their children are
//    born there. Every other top-level cgroup (system.slice, user.slice, a
//    container runtime's) is narrowed to the pool, except mlOS's own (names
//    starting with "mlos"). New processes that appear in the root cgroup
//    (spawned by kernel threads, or left by a job that ended) are moved on
//    the next sweep.
//  - mode "list": only the listed cgroups are narrowed.
//  - mode "off": nothing.
//
// A process of root's whose own affinity lies wholly inside the exclusive
// CPUs is left where it is and reported (moving it would override the
// affinity root chose); another user's is moved all the same (its
// affinity becomes the pool) and reported as overridden.
// A user-set affinity narrower than the pool survives: the kernel (>= 6.2)
// keeps a task's requested mask across cpuset changes and intersects it.
// Undone (processes moved back to the root, cgroups restored) when no
// confining job holds CPUs, or when the pool would be empty. What was
// narrowed, and from what, is saved in <state_dir>/confinement.json before
// it is changed, so a mlosd restarted after kill -9 restores or re-applies.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/confinement_plan.h"
#include "core/cpu_set.h"
#include "core/status.h"
#include "os/cgroup/cgroup_fs.h"
#include "os/process_facts.h"

namespace mlos::daemon {

using os::ProcessFacts;

struct ConfinementConfig {
  std::string mode = "node";          // node | list | off
  std::vector<std::string> cgroups;   // list mode
  std::string base = "mlos";          // mlOS's cgroups: never narrowed
  bool v2 = false;
};

class Confinement {
 public:
  // `cpuset`: the cpuset hierarchy's root (v1) or the unified root (v2);
  // `facts`: what /proc says of a pid (nullopt: gone).
  Confinement(ConfinementConfig config, std::shared_ptr<os::CgroupFs> cpuset, std::string state_dir,
              std::function<std::optional<ProcessFacts>(pid_t)> facts);

  // Reads what a previous mlosd left (nothing if no state file); the next
  // update() re-applies or undoes it. STATE_CORRUPT if the file is damaged.
  // Call once, before the first update().
  Result<std::vector<std::string>> load();
  // Confines others to (node - exclusive), or undoes it when the plan is
  // inactive. Cheap when the plan did not change.
  void update(const CpuSet& node, const CpuSet& exclusive, const std::function<bool(pid_t)>& exempt = nullptr);
  // Moves processes that appeared in the root cgroup (mode node, active),
  // except `exempt` (the owners of mlOS's jobs: one left in the root, its
  // cgroup move having failed or its claim adopted from the ledger, runs on
  // its own CPUs, which may be exclusive).
  using Exempt = std::function<bool(pid_t)>;
  void sweep(const Exempt& exempt = nullptr);
  // The CPUs the loaded (or current) confinement keeps every other process
  // off: the root cpuset's CPUs outside the pool; empty when not active. A
  // restarted mlosd, itself started inside the confinement, adds them back
  // to the node it manages.
  CpuSet withheld() const;
  // Gives the node back: undoes whatever is confined (processes back to
  // the root cgroup, narrowed cgroups restored, the state file emptied),
  // whatever the jobs. mlosd does this when it stops, and `mlosd
  // --give-back-node` for a mlosd that died; the next update() confines
  // again. Whether anything was confined.
  bool give_back();
  const std::string& mode() const { return config_.mode; }
  bool active() const { return active_; }
  nlohmann::json status() const;

 private:
  std::string shared() const { return config_.base + "/shared"; }
  std::vector<std::string> targets() const;
  void apply(const CpuSet& pool, const std::function<bool(pid_t)>& exempt);
  void undo();
  Status ensure_shared(const CpuSet& pool);
  void narrow(const std::string& cgroup, const CpuSet& pool);
  Status save_state() const;
  void note(const std::string& line);

  ConfinementConfig config_;
  std::shared_ptr<os::CgroupFs> fs_;
  std::string state_dir_;
  std::function<std::optional<ProcessFacts>(pid_t)> facts_;
  bool active_ = false;
  CpuSet pool_;
  std::string reason_ = "no exclusive job confines other processes";
  bool planned_ = false;                          // update() ran once
  std::map<std::string, std::string> narrowed_;  // cgroup -> its cpuset.cpus before
  std::set<pid_t> kernel_threads_;               // never moved
  std::map<pid_t, nlohmann::json> left_alone_;   // pid -> {comm, cpus}
  std::map<pid_t, nlohmann::json> overridden_;   // pid -> {comm, uid, cpus}: another user's pinning overridden
  std::vector<std::string> errors_;              // last few, for status
};

}  // namespace mlos::daemon
