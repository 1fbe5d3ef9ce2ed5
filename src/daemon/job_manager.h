/* SPDX-License-Identifier: Apache-2.0 */
// What mlosd does with jobs, apart from sockets: grants CPUs from the node's
// pool (exclusive CPUs leave the shared pool), gives every job its own
// cgroup, follows phases through each job's phase page and turns them into
// CPU weights, keeps the registry durable, and reconciles it with reality
// after a (re)start. Single-threaded: the daemon's event loop calls it.
//
// Authorisation is decided here, from the kernel's credentials of the
// caller: anyone may read; a job is changed or released only by its owner's
// uid or root. Jobs belong to a process (the requester, by pid and start
// time), not to a connection, so they survive client reconnects and daemon
// restarts, and end when that process ends.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory_pressure.h"
#include "core/phase_weights.h"
#include "core/placement.h"
#include "core/status.h"
#include "core/topology.h"
#include "daemon/confinement.h"
#include "daemon/job_book.h"
#include "daemon/job_cgroups.h"
#include "daemon/job_memory_watches.h"
#include "daemon/job_metrics.h"
#include "daemon/job_origin.h"
#include "daemon/job_registry.h"
#include "daemon/job_store.h"
#include "daemon/live_job.h"
#include "daemon/pending_replies.h"
#include "daemon/registry_store.h"
#include "daemon/user_quotas.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/peer_credentials.h"
#include "os/unique_fd.h"
#include "policy/job_policy_requests.h"
#include "policy/policy_grant.h"
#include "policy/policy_hosts.h"
#include "protocol/grant.h"

namespace mlos::daemon {

// Everything the manager touches outside itself, injectable for tests.
struct JobManagerDeps {
  Topology topology;
  CpuSet allowed;                                   // the node's CPUs mlosd may hand out
  std::function<MemoryAvailability()> memory;
  std::shared_ptr<os::CgroupDriver> cgroups;        // null: no cgroups (--cgroups none)
  std::shared_ptr<RegistryStore> state;             // the registry's files
  PhaseWeights policy = PhaseWeights::defaults();
  std::function<Result<ProcessId>(pid_t)> identify;  // pid -> pid + start time
  // false only when the owner is provably gone (os::Liveness::kGone): a
  // failure to look (EMFILE, ...) keeps the job.
  std::function<bool(const ProcessId&)> is_alive;
  // The connecting process as it is now, through the connection's pidfd:
  // NO_SUCH_THREAD once it has exited (a connection handed to another
  // process acts for nobody), PERMISSION once its real or effective uid is
  // no longer the peer's (it exec'd a setuid program).
  std::function<Result<ProcessId>(const os::PeerCredentials&)> peer_process;
  // Moves `target` into job cgroup `cgroup` for `requester`: verifies that
  // the pid still names `target` (not a reused pid) and, unless requester is
  // root, that it runs with requester's real and effective uid.
  std::function<Status(const std::string& cgroup, const ProcessId& target, uid_t requester)> move_process;
  UserQuotas quotas;
  // The job whose cgroup process `pid` sits in, if any (its envelope); null
  // or nullopt: none known, every job is placed from the node's pool.
  std::function<std::optional<uint64_t>(pid_t)> job_of_process;
  // The cgroup process `pid` is in, as /proc/<pid>/cgroup names it (v1:
  // the cpuset hierarchy's), recorded before mlosd moves a job's owner so
  // that the job's processes go back there at its end; null or nullopt:
  // unknown, they go where unmanaged processes belong.
  std::function<std::optional<std::string>(pid_t)> cgroup_of;
  // The CPUs cgroup `path` (as cgroup_of names it) lets its processes use:
  // its effective cpuset, or its nearest ancestor's. A job of a process in
  // a cgroup outside mlosd's base is placed inside them (a pod's or a Slurm
  // step's cpuset), whatever the client says. Null or nullopt: no bound.
  std::function<std::optional<CpuSet>(const std::string& path)> cgroup_cpus;
  // stay_in_cgroups (DaemonConfig): a job whose owner is in one of these
  // cgroups, or below, stays in its cgroup.
  std::vector<std::string> stay_in_cgroups;
  // mlosd's cgroup base (cgroup_base): cgroups under it are mlosd's own.
  std::string cgroup_base = "mlos";
  // The process and its ancestors, innermost first (os::lineage): where
  // there is no job cgroup to look in, an envelope is found by its owner.
  std::function<std::vector<ProcessId>(pid_t)> lineage;
  // The embedded ledger's live claims when it changed since the last call
  // (LedgerFollower), nullopt when it did not; null: mlosd follows no
  // ledger. See follow_ledger().
  std::function<std::optional<Result<ClaimLedger>>()> ledger_changes;
  // Keeps other processes off the CPUs of exclusive jobs that confine
  // (JobRecord::confines); null: exclusive only among mlOS's jobs.
  std::shared_ptr<Confinement> confinement;
  // Whether jobs of `uid` may confine others (root always may).
  std::function<bool(uint32_t uid)> may_confine;
  // Maps descriptor `fd` of process `owner` (its phase page) into mlosd.
  std::function<Result<os::UniqueFd>(const ProcessId& owner, int fd)> fetch_fd;
  std::function<uint64_t()> now_ns;                 // monotonic
  // Memory pressure: thresholds for jobs that give none (config
  // "memory_pressure"), and the node's figures (MemAvailable, PSI).
  MemoryThresholds memory_thresholds;
  std::function<MemoryFigures()> node_memory;
  std::function<int64_t()> now_unix;
  // Policy modules (docs/policies.md): builds the manager of policy hosts
  // with the callbacks the job manager gives it (null: no policies; every
  // job runs on the built-in defaults). `default_policies` are attached to
  // every job mlosd grants (not to adopted ledger claims, which cannot read
  // advice); a failure to attach one is a note, not a refusal.
  std::function<std::unique_ptr<policy::PolicyHosts>(policy::PolicyHosts::Callbacks)> policy_hosts;
  std::vector<std::string> default_policies;
  // The job's CPU time as the policies see it: the owner's (pid) and the
  // busy time of a set of CPUs; null: unknown (-1 to policies).
  std::function<Result<double>(pid_t)> process_cpu_seconds;
  std::function<Result<double>(const CpuSet&)> cpu_busy_seconds;
};

class JobManager {
 public:
  explicit JobManager(JobManagerDeps deps);
  ~JobManager();
  // The policy manager's callbacks point at this object.
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Loads the state file and reconciles it: live owners' jobs are adopted
  // with their CPUs unchanged (their cgroups recreated and limits reapplied,
  // their phase pages mapped again), dead owners' jobs are pruned and their
  // cgroups removed, empty stray job cgroups removed. Returns what it did,
  // one line each. STATE_CORRUPT (file left untouched) if the file cannot
  // be trusted: the daemon must then refuse to start.
  Result<std::vector<std::string>> recover();

  // Grants a job to the calling process. `args`: num_cpus, memory_bytes,
  // numa_preference, exclusive, priority, label, single_node,
  // strict_membind, page_fd (the caller's number of `page`). Reply fields:
  // job, cpus, mems, nodes, primary_node, memory_policy, physical_cores,
  // cgroup, notes.
  Result<nlohmann::json> request(const os::PeerCredentials& peer, const nlohmann::json& args, os::UniqueFd page);
  Status release(const os::PeerCredentials& peer, uint64_t job);
  // A phase sent over the socket, for clients without a phase page.
  Status set_phase(const os::PeerCredentials& peer, uint64_t job, int phase);
  // Moves process `pid` (owned by the caller's uid, or any as root) into
  // the job's cgroup.
  Status attach(const os::PeerCredentials& peer, uint64_t job, pid_t pid);

  // Starts (or restarts, with new thresholds) watching the job's memory
  // pressure; `doorbell` is an eventfd of the owner's, rung on every level
  // change. `args`: job, event_fd (the owner's number of the doorbell),
  // thresholds (optional object, see memory_pressure_json.h). Reply: the
  // current report. Owner or root only.
  Result<nlohmann::json> watch_memory(const os::PeerCredentials& peer, const nlohmann::json& args,
                                      os::UniqueFd doorbell);
  // The job's current report, {"watching": false} if not watched. Owner or
  // root only (the figures describe the owner's memory).
  Result<nlohmann::json> memory_status(const os::PeerCredentials& peer, uint64_t job);
  // Descriptors the event loop should watch for memory wake-ups, and what
  // to do when one fires (sample that job now).
  using MemoryWakeup = JobMemoryWatches::Wakeup;
  std::vector<MemoryWakeup> memory_wakeups() const { return memory_.wakeups(jobs_); }
  // Changes whenever memory_wakeups() may have changed (a watch armed, a
  // watched job forgotten), so the event loop resyncs only then.
  uint64_t memory_wakeups_version() const { return memory_.version(); }
  void memory_woke(uint64_t job, int fd);

  // Follows phase pages and rewrites CPU weights of jobs whose phase
  // changed, samples memory pressure of watched jobs, and drops the jobs of
  // owners that are provably gone: every job whose owner nobody watches
  // (set_owner_watched), and `sweep_budget` of the others, in turn (a
  // safety net behind their pidfds). Records the removals once. Returns the
  // ids it pruned.
  std::vector<uint64_t> tick(size_t sweep_budget = SIZE_MAX);
  // Prunes `jobs`, whose owner has provably exited (the pidfd the event
  // loop held on it became readable); one registry write for all of them.
  // Returns the pruned ids (those still known).
  std::vector<uint64_t> owner_exited(const std::vector<uint64_t>& jobs);
  // The event loop holds a pidfd on the job's owner (or no longer does).
  void set_owner_watched(uint64_t job, bool watched);

  // Makes the embedded ledger's claims part of this book: each live claim
  // not yet known becomes a job (nested in the envelope it runs in, shared
  // instead of exclusive if its CPUs were already granted exclusively), and
  // adopted jobs whose claim left the ledger are forgotten. Adopted jobs
  // get no cgroup: their processes placed themselves. Called by recover()
  // and tick(); returns what it did, one line each.
  std::vector<std::string> follow_ledger();

  // Policy modules of a job (owner or root): attach `name` with the job's
  // `config` (recorded, so a restarted mlosd attaches it again), or detach
  // it. Reply of request_policy: {"policies": [names the job uses]}.
  Result<nlohmann::json> request_policy(const os::PeerCredentials& peer, uint64_t job, const std::string& name,
                                        const nlohmann::json& config);
  Status release_policy(const os::PeerCredentials& peer, uint64_t job, const std::string& name);
  // What the job's policies advise now (anyone may read): threads (the
  // grant's count unless a policy advised one), cpu_weight, who set them,
  // the policies it uses and those failed now.
  Result<nlohmann::json> advice(uint64_t job) const;
  // The policy directory's catalog, the loaded policies, the defaults.
  nlohmann::json policies_status() const;
  // Just the loaded policies (PolicyHosts::status()): no directory scan.
  nlohmann::json loaded_policies() const;
  // Root only: load a policy ahead of any job (reply: {}), or unload an
  // idle one.
  Result<nlohmann::json> load_policy(const os::PeerCredentials& peer, const std::string& name);
  Status unload_policy(const os::PeerCredentials& peer, const std::string& name);
  // The policy hosts' sockets (the event loop wakes on their replies) and
  // what to do when one is readable.
  std::vector<int> policy_fds() const;
  void policy_woke();

  // The event loop never waits for a policy (issue 47, finding 3): a
  // request(), request_policy() or load_policy() whose answer depends on a
  // policy's verdict not known at once replies {"pending": token}, and its
  // real reply is taken from here later, once a policy_woke() or tick()
  // has collected every verdict it needs. Meanwhile a granted job holds
  // its CPUs; a refused one is then taken back.
  // (daemon/pending_replies.h).
  using FinishedReply = PendingReplies::Finished;
  std::vector<FinishedReply> take_finished_replies() { return replies_.take_finished(); }
  // The token of a pending reply, nullopt for any other.
  static std::optional<uint64_t> pending_token(const nlohmann::json& reply) { return PendingReplies::token_of(reply); }

  // What a config reload changes here (daemon/config_reload.h): quotas,
  // memory thresholds for jobs that give none, the cgroups jobs stay in,
  // who may confine, and the policies every job gets. They apply to
  // requests from now on, except who may confine: that is judged at once,
  // for running exclusive jobs too.
  struct Reconfigurable {
    UserQuotas quotas;
    MemoryThresholds memory_thresholds;
    std::vector<std::string> stay_in_cgroups;
    std::function<bool(uint32_t uid)> may_confine;
    std::vector<std::string> default_policies;
  };
  void reconfigure(Reconfigurable settings);

  // Rewrites the registry's snapshot and empties its journal (a clean
  // stop does this, so the next start reads one file).
  Status write_snapshot();

  // Node figures and one page of jobs, by id, after job id `after` (0: from
  // the first), at most `limit` of them and at most kStatusPageBytes of
  // their JSON text (at least one job); "next_after" is the cursor for the
  // next page (null after the last), "total_jobs" the count.
  static constexpr size_t kStatusPageBytes = 512 * 1024;  // a reply frame holds 1 MiB
  nlohmann::json status(uint64_t after = 0, size_t limit = SIZE_MAX) const;
  // What each uid holds in jobs (connections are the server's to count).
  const std::map<uint32_t, UserHoldings>& holdings() const { return book_.holdings(); }
  const UserQuotas& quotas() const { return d_.quotas; }
  int node_cpus() const { return d_.allowed.count(); }
  int node_gpus() const { return static_cast<int>(d_.topology.gpus.size()); }
  std::vector<JobSample> samples() const;
  const std::string& cgroup_version() const { return cgroup_version_; }
  // Owner of each job, for the daemon's pidfd watches.
  std::vector<std::pair<uint64_t, ProcessId>> owners() const;
  std::optional<ProcessId> owner_of(uint64_t job) const;

 private:
  using Live = LiveJob;

  Result<Live*> owned_job(const os::PeerCredentials& peer, uint64_t job);
  // recover()'s steps (job_manager_recover.cpp): a dead owner's job pruned
  // with its cgroup; a live owner's adopted (its owner moved back into a
  // cgroup that vanished if `move_owner_in`); dependents left without
  // their envelope or host made jobs of the node.
  void prune_at_start(const JobRecord& r, std::vector<std::string>& report);
  void adopt_at_start(const JobRecord& r, bool move_owner_in, std::vector<std::string>& report);
  void stand_alone_at_start(std::vector<std::string>& report);
  // A live claim of the embedded ledger booked as a job (follow_ledger).
  void adopt_claim(const Claim& claim, std::vector<std::string>& report);
  JobRegistry registry() const;
  // One change, durable before the reply (JobStore).
  Status persist(const Live& job);
  Status persist_removal(const std::vector<uint64_t>& ids);
  // Reads the job's phase (page or last set_phase), tells the policies of
  // a change, and refreshes the cgroup that holds the job.
  void follow_phase(Live& job);
  // The job whose cgroup holds `job`'s threads: itself, or the envelope it
  // is nested in; nullptr if that job is gone.
  Live* cgroup_holder(Live& job);
  // Starts the job's watch on `doorbell` (validated), records it.
  Status start_memory_watch(Live& job, os::UniqueFd doorbell, int owner_fd, const nlohmann::json& thresholds);
  // Tells the job's policies of a new memory pressure level (none: no change).
  void tell_pressure(const Live& job, std::optional<int> level);
  void forget(uint64_t id, const std::string& why);
  // When a job that others depend on goes: its nested jobs become jobs of
  // the node (and get cgroups of their own), its guests a new host.
  void rehome_dependents(const JobRecord& gone);
  // forget()s `ids` (all ending for `why`), dependents before the jobs they
  // depend on, none re-homed onto or rewriting a job that goes too.
  void forget_together(std::vector<uint64_t> ids, const std::string& why);
  // Where a granted job goes (job_manager_grant.cpp): the job the process
  // runs in (`nested` in it, or else its host), the owner's cgroup outside
  // mlosd's, and the placement.
  struct GrantPlan {
    Live* enclosing = nullptr;
    bool nested = false;
    JobOrigin origin;
    Placement placement;
  };
  // Quotas, bounds and placement for `x` (its GPU bounds filled in).
  Result<GrantPlan> plan_grant(const os::PeerCredentials& peer, const ProcessId& owner, protocol::GrantRequest& x);
  // The job as granted: recorded, booked, in its cgroup (not persisted).
  Live& admit(const os::PeerCredentials& peer, const ProcessId& owner, const protocol::GrantRequest& x,
              const GrantPlan& plan, os::UniqueFd page);
  // Maps the owner's phase page (its number `owner_fd`), or notes why not.
  void map_phase_page(Live& job, const os::UniqueFd& page, int owner_fd);
  // Attaches the policies of a job just admitted and the defaults; the
  // reply once their verdicts are in (finish_grant).
  Result<nlohmann::json> attach_grant_policies(Live& job, const Placement& placement);
  // The end of request() once the policies it asked for gave their
  // verdicts: the reply, or (a refusal) the job taken back.
  Result<nlohmann::json> finish_grant(uint64_t id, const Placement& placement, const std::optional<Error>& refused);
  // Makes nested job `child`, whose envelope (job `gone`) ended, a job of
  // the node (JobBook::stand_alone), its notes shown by `mlos status`.
  // Does not touch cgroups.
  void stand_alone(Live& child, uint64_t gone);
  // The job `who` runs inside, if any: the job whose cgroup holds it, else
  // the innermost envelope owned by it or an ancestor.
  Live* enclosing_job(const ProcessId& who);
  // Whether an exclusive job of the node owned by `uid` confines others.
  bool confines(const JobRecord& r) const;
  // Brings the node's confinement in line with the jobs (end of every
  // operation that may change them; cheap when nothing changed).
  void confine();
  JobSample sample(const Live& job) const;

  // Policy modules (job_manager_policies.cpp).
  policy::PolicyHosts::Callbacks policy_callbacks();
  std::optional<mlos_policy_job_figures_t> policy_figures(uint64_t job) const;
  // What the job's cgroup lets its policies set (policy/policy_grant.h).
  policy::GrantScope grant_scope(const Live& job) const;
  Status apply_policy_action(const std::string& policy, const policy::Action& action);
  void take_back_policy(const std::string& policy, uint64_t job);
  // Polls the hosts, then carries out the policies' queued requests and
  // releases of other policies (policy/job_policy_requests.h).
  void poll_policies();
  // Attaches the job's recorded policies and the defaults again (a
  // restarted mlosd), without waiting: each failure becomes a note on the
  // job when its verdict comes.
  void reattach_policies(Live& job);
  // A verdict callback that notes a failure on job `id` (if it is still
  // there) as prefix + the error's message + suffix.
  policy::PolicyHosts::Verdict note_policy_failure(uint64_t id, std::string note_prefix, std::string note_suffix);
  // Attaches of the default policies the job did not ask for itself, for
  // replies_.after(): a failure is a note on the job, never a refusal.
  std::vector<PendingReplies::Ask> default_policy_asks(const Live& job);
  // The job's cgroup (or its envelope's) after a policy changed its
  // settings.
  void refresh_after_policy(Live& job);
  nlohmann::json advice_json(const Live& job) const;
  // The grant's thread count (its physical cores): the advice when no
  // policy gives one.
  int grant_threads(const Live& job) const;

  JobManagerDeps d_;
  std::unique_ptr<policy::PolicyHosts> policies_;  // null: no policy modules
  std::deque<policy::JobPolicyOp> policy_ops_;     // queued by policies, run by poll_policies
  PendingReplies replies_;  // replies waiting for policies' verdicts
  std::string cgroup_version_;
  std::map<uint64_t, Live> jobs_;
  JobBook book_;    // ids, bookings, dependents, envelopes, holdings
  JobStore store_;  // the registry on disk
  JobCgroups cgroups_;  // the jobs' cgroups (a no-op without a driver)
  JobMemoryWatches memory_;
  uint64_t confine_calls_ = 0;  // every 10th sweeps the root cgroup
  std::set<uint64_t> watched_;  // jobs whose owner the event loop watches
  std::set<uint64_t> pruning_;  // jobs forget_together() is forgetting now
  // Readings one loop turn shares among the jobs that need them: the jobs
  // of one owner process have its CPU time, jobs on the same CPUs the same
  // busy time, and a cgroup's usage is read once. Without it a tick of two
  // policies over 2,000 jobs read /proc/<pid>/stat, /proc/stat and cgroup
  // files 4,000 times each, 64 % of the loop in the soak. Emptied at each
  // tick and policy wake-up: no figure is older than a turn.
  struct TurnReadings {
    std::map<pid_t, std::optional<double>> owner_cpu_seconds;
    std::map<std::string, std::optional<double>> busy_seconds;  // by CPU list
    std::map<std::string, std::optional<os::CgroupUsage>> usage;  // by cgroup
  };
  mutable TurnReadings turn_;
  uint64_t sweep_cursor_ = 0;    // the last job the sweep checked
};

}  // namespace mlos::daemon
