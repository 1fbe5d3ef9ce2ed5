/* SPDX-License-Identifier: Apache-2.0 */
// The policy manager: which policies are loaded, which jobs use each, and
// the life of their host processes. A policy is loaded (its host started
// and initialised) at the first job's request and unloaded a grace period
// after its last job goes. Events (attach, detach, phase and pressure
// changes, periodic ticks) go to a host one at a time; what the policy asks
// for comes back as actions, which the owner of this object applies after
// its own grant checks.
//
// Containment: a host that crashes, closes its socket, sends anything
// malformed, or misses the reply deadline is killed and marked failed. The
// jobs it served lose its effects at once (Callbacks::reset: back to the
// built-in defaults) but keep the policy: it is restarted with exponential
// backoff, re-initialised and re-attached to them.
//
// Waiting: attach_async() and load_async() never wait for a host; their
// verdict comes later, from poll(). mlosd's event loop uses only these, so
// a policy that hangs in init or attach delays nobody but the requester
// (issue 47, finding 3). attach() and load() wait for the verdict, at most
// start_deadline_ms: for a caller with a thread of its own (libmlos's
// policy service).
//
// Single-threaded: mlosd's event loop (or the library's policy thread)
// calls every method.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "mlos/policy.h"
#include "policy/policy_catalog.h"
#include "policy/policy_host_process.h"
#include "policy/policy_protocol.h"

namespace mlos::policy {

struct PolicyHostsOptions {
  std::string host_binary;            // mlos-policyhost
  std::string policy_dir;
  std::optional<uid_t> also_trusted;  // besides root (embedded mode: the user)
  std::string run_as;                 // hosts started as root become this user ("" = nobody)
  uint64_t memory_limit = 256ull << 20;
  int deadline_ms = 1000;             // a host answers every event within this
  int start_deadline_ms = 5000;       // spawn, load and init
  int unload_grace_ms = 30000;        // after the last job leaves
  int backoff_initial_ms = 1000;      // first restart after a failure
  int backoff_max_ms = 60000;
  int stable_after_ms = 60000;        // a host up this long starts its next backoff afresh
  nlohmann::json node_config = nlohmann::json::object();  // {"<policy>": {...}} given to init
  std::map<std::string, uint32_t> tick_interval_ms;       // per policy, over its own tick_interval_ms
  // Tests only: runs after a policy's file was opened and checked, before
  // its host starts (where a swapped directory must make no difference).
  std::function<void(const std::string& path)> after_module_check;
};

class PolicyHosts {
 public:
  struct Callbacks {
    // The job's figures now; nullopt: the job is gone.
    std::function<std::optional<mlos_policy_job_figures_t>(uint64_t job)> figures;
    // Applies one action of `policy`; an error is a refusal (counted, and
    // logged the first time per policy and kind).
    std::function<Status(const std::string& policy, const Action& action)> apply;
    // Undoes every effect `policy` had on `job` (it detached or failed).
    std::function<void(const std::string& policy, uint64_t job)> reset;
    std::function<uint64_t()> now_ns;  // monotonic
    // Optional. The job's read log for `policy`: the reads it has not been
    // given yet and the plan's window, within `budget`. Each read is given
    // once per policy. nullopt: no read log for this job (the policy's
    // read_log answers UNSUPPORTED).
    std::function<std::optional<JobReads>(const std::string& policy, uint64_t job, ReadBudget budget)> reads;
  };

  // A verdict on an attach or a load: called exactly once, with Ok or the
  // error attach() would return.
  using Verdict = std::function<void(Status)>;

  PolicyHosts(PolicyHostsOptions options, Callbacks callbacks);
  ~PolicyHosts();  // stops every host
  PolicyHosts(const PolicyHosts&) = delete;
  PolicyHosts& operator=(const PolicyHosts&) = delete;

  // Attaches `job` to policy `name` with the job's `config`, loading the
  // policy first if needed; waits for the policy's verdict. Errors:
  // NOT_FOUND (no such policy in the directory, or it was skipped: says
  // why), VERSION_MISMATCH / INVALID_ARGUMENT (the host refused to load it,
  // or the policy refused the config: the message names the key),
  // POLICY_FAILED (the host crashed or hung, now or recently: it is in
  // backoff), INVALID_ARGUMENT (already attached with another config).
  Status attach(const std::string& name, uint64_t job, const nlohmann::json& config);
  // The same without waiting: `done` is called before this returns when
  // the verdict is known at once (unknown policy, bad config, in backoff,
  // already attached, a host that could not be started), else from a
  // later poll() (the policy's reply, its refusal, or its failure: a host
  // that never ran attaches nobody; one that fails while attaching keeps
  // the job, to re-attach after its restart, and says POLICY_FAILED).
  // The job counts as attached (policies_of) from the call on.
  void attach_async(const std::string& name, uint64_t job, const nlohmann::json& config, Verdict done);
  // NOT_FOUND if `job` does not use `name`.
  Status detach(const std::string& name, uint64_t job);
  void detach_job(uint64_t job);  // from every policy (the job ended)
  // Event notifications for every policy `job` uses.
  void phase_changed(uint64_t job, int old_phase, int new_phase);
  void pressure_changed(uint64_t job, int level);
  // Reads replies, applies actions, fails hung hosts, sends due ticks,
  // restarts failed hosts whose backoff ran out, unloads idle ones.
  void poll();

  // Root's explicit load: started now and kept without jobs until
  // unload(). unload() refuses (INVALID_ARGUMENT) while jobs use it;
  // NOT_FOUND if it is not loaded.
  Status load(const std::string& name);
  // load() without waiting; `done` as for attach_async.
  void load_async(const std::string& name, Verdict done);
  Status unload(const std::string& name);

  Result<PolicyCatalog> catalog() const;
  std::vector<std::string> policies_of(uint64_t job) const;
  // The policies `job` uses that are failed now, with the reason.
  std::vector<std::pair<std::string, std::string>> failed_policies_of(uint64_t job) const;
  // Per loaded policy: state, pid, jobs, failures, restarts, last failure,
  // actions applied and refused by kind, ticks and their latency.
  nlohmann::json status() const;
  // {"dir", "available": [{name, path}], "skipped": [{path, why}],
  // "loaded": status()}, plus "error" when the directory cannot be read:
  // what mlosd's `policies` op and the embedded service report.
  nlohmann::json overview() const;
  // The hosts' sockets, for an event loop that wants to wake on replies.
  std::vector<int> fds() const;
  // No policy is loaded (running, starting or failed): poll() has nothing
  // to do until the next attach or load.
  bool idle() const { return loaded_.empty(); }
  const PolicyHostsOptions& options() const { return o_; }

 private:
  enum class State { kStarting, kRunning, kFailed };
  struct Event {
    std::string op;
    nlohmann::json args;
    uint64_t job = 0;  // attach: whose verdict this is
  };
  struct Loaded {
    std::string name, path;
    State state = State::kStarting;
    std::unique_ptr<PolicyHostProcess> host;
    PolicyInfo info;
    std::map<uint64_t, nlohmann::json> jobs;  // attached jobs -> their config
    bool pinned = false;
    bool wants_reads = false;  // its policy has read a read log: ticks carry reads
    uint64_t started_ns = 0, idle_since_ns = 0, next_tick_ns = 0, restart_at_ns = 0;
    int backoff_ms = 0;
    std::deque<Event> queue;
    std::optional<Event> in_flight;
    uint64_t in_flight_id = 0, in_flight_since_ns = 0;
    std::string last_failure;
    uint64_t failures = 0, restarts = 0, ticks = 0, dropped_actions = 0;
    double tick_seconds_last = 0, tick_seconds_max = 0, tick_seconds_sum = 0;
    std::array<uint64_t, kActionKindCount> applied{}, refused{};
    std::set<int> refusal_logged;  // action kinds whose refusal was logged
    bool ever_ran = false;             // its init succeeded once
    std::optional<Error> refusal;      // the host's own refusal to load it (deterministic)
    bool discard = false;              // refused on its first start: removed at the next reap
    std::map<uint64_t, std::vector<Verdict>> attach_waiters;  // job -> who waits for its attach
    std::vector<Verdict> load_waiters;
  };

  // The loaded policy, or a new one whose host was just spawned (not
  // waited for). Errors: NOT_FOUND, PERMISSION (untrusted file or host),
  // and what spawning says.
  Result<Loaded*> loaded_or_spawn(const std::string& name);
  // Queues `done`'s verdict, delivered by deliver_ready() once no loop
  // over loaded_ is under way.
  void decide(Verdict done, Status verdict);
  void deliver_ready();
  // Removes the policies refused on their first start (Loaded::discard).
  void reap_discarded();
  // The answer to a request for `l` while it is failed (or refused on its
  // first start, which also removes it: `l` is then gone).
  Error failed_now(Loaded& l);
  // Every waiter of `l` gets `why` (it is unloaded or stopped).
  void abandon_waiters(Loaded& l, const Error& why);
  // Spawns the host and queues init (and an attach per job); kStarting.
  Status start(Loaded& l);
  void fail(Loaded& l, const std::string& why);
  void enqueue(Loaded& l, Event e);
  // Queues a tick with every attached job's figures, split over as many
  // events as the host frame bound needs (kMaxTickFiguresBytes each).
  void enqueue_tick(Loaded& l);
  // Sends event `op` (with the job's figures added) to every running
  // policy `job` uses.
  void notify(uint64_t job, const std::string& op, nlohmann::json args);
  void dispatch(Loaded& l);
  // Handles whatever replies arrived; false if the host failed.
  bool drain(Loaded& l);
  // Blocks until `l` has nothing queued or in flight (or failed), at most
  // until `until_ns`.
  void settle(Loaded& l, uint64_t until_ns);
  // For attach() and load(): settles policy `name` until `verdict` is
  // set, at most start_deadline_ms.
  void wait_for(const std::string& name, const std::optional<Status>& verdict);
  void handle_reply(Loaded& l, const HostReply& reply);
  void apply_actions(Loaded& l, const std::vector<Action>& actions);
  nlohmann::json figures_json(uint64_t job) const;
  // Adds the read logs (Callbacks::reads) to an event as it is sent: a
  // tick takes each job's new reads, for a policy that has used a read log
  // (a reply said "reads_used"); attach, phase and pressure events carry
  // the plan only, so a policy can look.
  void add_reads(const Loaded& l, Event& e) const;
  void stop_host(Loaded& l);
  uint64_t now() const { return cb_.now_ns(); }

  PolicyHostsOptions o_;
  Callbacks cb_;
  std::map<std::string, Loaded> loaded_;
  std::vector<std::pair<Verdict, Status>> ready_;  // decided, not yet delivered
  bool delivering_ = false;
};

}  // namespace mlos::policy
