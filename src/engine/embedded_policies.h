/* SPDX-License-Identifier: Apache-2.0 */
// Policy modules in embedded mode: libmlos's own PolicyHosts, serving the
// jobs of this process (docs/policies.md, "Embedded mode").
//
// One thread, "mlos-policies" (the "mlos-" prefix keeps jobs from treating
// it as one of theirs), owns the hosts and runs every PolicyHosts call:
//  - it spawns the hosts. A host dies with the thread that started it
//    (PR_SET_PDEATHSIG fires on the exit of the parent *thread*), so a
//    caller's short-lived thread must not be the one;
//  - it follows each job's phases from an in-memory phase page that the job
//    writes on set_phase (a few stores, no system call; Grant::phase_sink),
//    and tells the policies of a change within kFollowMs;
//  - it sends ticks, reads replies and applies actions.
// A public method queues its work for that thread and waits for it.
//
// What a policy may do to an embedded job: advise its thread count (within
// its CPUs), advise on files the user may read, attach and release other
// policies for it (applied on this thread after the event; only what it
// attached may it release), recommend a placement and publish a report
// (both shown, not applied). Its figures carry the
// job's memory-pressure level, sampled (no pressure events are sent). CPU and I/O weights and
// memory.high/low need a cgroup, which only mlosd gives a job: they are
// refused as UNSUPPORTED and counted, never applied.
//
// Thread-safe. A forked child does not inherit the service (its thread does
// not exist there): for_this_process() starts a new one in the child.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu_set.h"
#include "core/status.h"
#include "engine/claim_broker.h"
#include "engine/policy_advice.h"
#include "engine/read_log.h"
#include "policy/policy_hosts.h"

namespace mlos {

class EmbeddedPolicies {
 public:
  static constexpr int kFollowMs = 50;  // phase changes reach policies within this
  static constexpr int kPressureSampleMs = 200;

  struct Options {
    policy::PolicyHostsOptions hosts;
    // Attached to every job when it is granted; one that cannot be attached
    // is logged (once per policy) and the job runs without it.
    std::vector<std::string> defaults;
    // Requested for every job ({"name": {config}}), as if the job had asked
    // for them with its request (MLOS_JOB_POLICIES).
    nlohmann::json every_job = nlohmann::json::object();
    // The job's figures the process measures (tests inject their own):
    // CPU seconds of this process, busy seconds of a set of CPUs,
    // resident bytes of this process. nullopt: unknown.
    std::function<std::optional<double>()> process_cpu_seconds;
    std::function<std::optional<double>(const CpuSet&)> cpu_busy_seconds;
    std::function<std::optional<uint64_t>()> resident_bytes;
    // The memory-pressure level of a job with `memory_bytes` (0: none
    // declared), sampled for its figures; nullopt: unknown. Made once per
    // job. Default: a LocalPressureFeed of this process without kernel
    // triggers (its cgroup's working set against its limit, the node, the
    // job's budget), sampled at most every kPressureSampleMs.
    std::function<std::function<std::optional<int>()>(uint64_t memory_bytes)> pressure_level;
    // Where a job's policy reports go (engine/policy_report_file.h), for
    // `mlos status`: asked when the job is added. Unset, or "": in memory
    // only (report()).
    std::function<std::string()> report_dir;
  };

  // What the job was granted, for its figures and the grant checks.
  struct JobGrant {
    CpuSet cpus;
    int primary_node = -1;
    int recommended_threads = 1;
    uint64_t memory_bytes = 0;  // 0: no limit
    int priority = 0;
  };

  // Starts the thread. The options' measuring functions default to the
  // kernel's figures (/proc/self/stat, /proc/stat, /proc/self/statm).
  explicit EmbeddedPolicies(Options options);
  ~EmbeddedPolicies();  // stops every host, then the thread
  EmbeddedPolicies(const EmbeddedPolicies&) = delete;
  EmbeddedPolicies& operator=(const EmbeddedPolicies&) = delete;

  // The process's service, configured from the environment and where
  // libmlos is installed (embedded_policy_config.h); created on first use
  // and kept for the life of the process. UNSUPPORTED (saying where it
  // looked) when no policy host is installed.
  static Result<std::shared_ptr<EmbeddedPolicies>> for_this_process();

  // Registers job `job` (its claim id, not 0) with its grant, the sink
  // its phases are published to (make_phase_sink) and its read log (may
  // be null: its policies' read_log is then UNSUPPORTED). Attaches
  // nothing. INVALID_ARGUMENT for a job already registered.
  Status add_job(uint64_t job, const JobGrant& grant, std::shared_ptr<PhaseSink> phases,
                 std::shared_ptr<ReadLog> reads = nullptr);
  // Attaches the defaults the job does not use yet; one that cannot be
  // attached is logged (once per policy) and skipped.
  void attach_defaults(uint64_t job);
  // Detaches the job from every policy and forgets it (release, or a
  // failed grant). Unknown jobs are ignored.
  void remove_job(uint64_t job);
  // The phase sink add_job() wants: an in-memory phase page, written by
  // the job on set_phase (a few stores, no system call).
  static std::shared_ptr<PhaseSink> make_phase_sink(uint64_t now_ns);

  // As ClaimBroker::request_policy / release_policy / advice.
  // INVALID_HANDLE for a job this service does not know.
  Result<std::vector<std::string>> request(uint64_t job, const std::string& name, const nlohmann::json& config);
  Status release(uint64_t job, const std::string& name);
  Result<PolicyAdvice> advice(uint64_t job);
  // What the job's policies published about it: the report file's object
  // (engine/policy_report_file.h) without its file-only fields.
  // INVALID_HANDLE for a job this service does not know.
  Result<nlohmann::json> report(uint64_t job);

  // PolicyHosts::status() of the loaded policies, and the catalog.
  nlohmann::json status();
  const Options& options() const { return o_; }

 private:
  struct State;
  // Runs `work` on the policy thread and waits for it.
  void run(std::function<void()> work);
  void loop();

  Options o_;
  std::unique_ptr<State> s_;
};

}  // namespace mlos
