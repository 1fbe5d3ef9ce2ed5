/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's record of the jobs it manages, and how it is reconciled with
// reality after a (re)start. Pure logic: persistence goes through
// os::CheckedJsonFile, liveness and cgroup listings are passed in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/claim_ledger.h"
#include "core/cpu_set.h"
#include "core/status.h"

namespace mlos::daemon {

struct JobRecord {
  uint64_t id = 0;
  ProcessId owner;
  uint32_t uid = 0;
  CpuSet cpus;
  CpuSet mems;
  bool exclusive = false;
  uint64_t memory_bytes = 0;
  int priority = 0;
  std::string label;
  int64_t created_unix = 0;
  // The owner's descriptor number of its phase page (a memfd), -1 if it
  // gave none: a restarted daemon maps the page again through
  // pidfd_getfd(2) instead of asking the client.
  int page_fd = -1;
  // The owner's number of the eventfd it gave to watch_memory (-1: not
  // watched) and the thresholds it asked for, so a restarted daemon keeps
  // notifying it.
  int memory_event_fd = -1;
  nlohmann::json memory_thresholds;  // null when not watched
  // A job requested from inside another job's cgroup by another process
  // (the library under `mlos run`, a child of a trainer) is nested in it:
  // carved from its CPUs, in its cgroup, booked against it, not the node.
  uint64_t parent = 0;
  // A second job of a process that sits in its first job's cgroup (one
  // cgroup per process) is that job's guest: its CPUs are added to the
  // host's cpuset, so the process can run on both.
  uint64_t host = 0;
  // Made by `mlos run` for a command and everything it starts: every later
  // request from a process inside it (its cgroup, or the owner's lineage
  // when there is no cgroup) nests in it, the owner's own included (the
  // owner exec'd the command, so the command is the owner).
  bool envelope = false;
  // Not 0: the job is a claim of the embedded ledger (made while mlosd was
  // down, or by a process told MLOS_MODE=embedded) that mlosd adopted so
  // that it books its CPUs; it ends when the claim leaves the ledger or its
  // owner exits. The claim's id in the ledger.
  uint64_t ledger_claim = 0;
  // An exclusive job of the node (not nested) whose owner may keep every
  // other process off its CPUs (root, or the configured group): its CPUs
  // leave the pool of unmanaged processes too (daemon/confinement.h).
  bool confines = false;
  // The policy modules the job asked for, by name, with its config for
  // each (an object of objects; empty: none). Defaults the daemon attaches
  // to every job are not recorded: a restarted daemon attaches its own.
  nlohmann::json policies = nlohmann::json::object();
  // The cgroup the owner was in when mlosd moved it into the job's (as
  // /proc/<pid>/cgroup names it; v1: its cpuset path): where the job's
  // processes go back when it ends. "" when not known (nested and hosted
  // jobs, no cgroups, registries from before).
  std::string origin_cgroup;
  // The owner's cgroup belongs to another manager (stay_in_cgroups): the
  // job has no cgroup of its own and its processes are never moved.
  bool stays_in_origin = false;
  // The NVIDIA GPUs it holds, by UUID (docs/gpu.md), and whether no other
  // claim may hold them too.
  std::vector<std::string> gpus;
  bool gpus_exclusive = false;
  // The job's GPU share file (mlos run --gpu-memory/--gpu-share), whose
  // accounting mlosd reads; "" = none. Written by the job's user: read only
  // if that user (or root) owns it, never followed through a link.
  std::string gpu_share_file;

  // The job's cgroup name under the daemon's base: "job-<id>".
  std::string cgroup() const { return "job-" + std::to_string(id); }
  nlohmann::json to_json() const;
};

struct JobRegistry {
  static constexpr int kSchemaVersion = 1;  // of the payload, see CheckedJsonFile
  // Job ids stay below 2^53, so that every JSON reader (JavaScript's
  // included) reads them exactly and they can never wrap: a registry with
  // next_id beyond it is corrupt, and a daemon that reached it refuses new
  // jobs instead of reusing ids.
  static constexpr uint64_t kMaxJobId = (uint64_t{1} << 53) - 1;
  uint64_t next_id = 1;
  std::vector<JobRecord> jobs;

  nlohmann::json to_json() const;
  // STATE_CORRUPT naming the first bad field; nothing is half-parsed.
  static Result<JobRegistry> from_json(const nlohmann::json& payload);

  // Journal entries (see RegistryStore): a record granted or changed, and
  // records forgotten. Applying one is idempotent, so a journal replayed
  // over a snapshot that already holds its changes gives that snapshot.
  static nlohmann::json put_entry(const JobRecord& record, uint64_t next_id);
  static nlohmann::json remove_entry(const std::vector<uint64_t>& ids);
  // Applies `entries` in order. STATE_CORRUPT naming the first entry that
  // is neither or whose record is bad; the registry is unchanged then.
  Status replay(const std::vector<nlohmann::json>& entries);
};

// What a starting daemon must do so that the registry matches reality.
struct ReconcilePlan {
  std::vector<JobRecord> adopt;             // owner alive: keep, CPUs unchanged
  std::vector<JobRecord> prune;             // owner gone: forget, remove its cgroup
  std::vector<std::string> stray_cgroups;   // under the base but in no record
};

// `is_alive` checks an owner (PID + start time); `cgroups` lists the job
// cgroups present under the base. A record whose owner lives is adopted
// even if its cgroup is missing (the daemon recreates it); stray cgroups are
// reported, not assumed empty: the caller removes only those without
// processes and reports the others.
ReconcilePlan reconcile(const JobRegistry& registry, const std::function<bool(const ProcessId&)>& is_alive,
                        const std::vector<std::string>& cgroups);

}  // namespace mlos::daemon
