/* SPDX-License-Identifier: Apache-2.0 */
// Who grants CPU claims: the embedded ledger today, mlosd later. A Job only
// talks to this interface, so the two engines differ in one place.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory_pressure.h"
#include "core/placement.h"
#include "core/status.h"
#include "core/topology.h"
#include "engine/policy_advice.h"
#include "engine/pressure_feed.h"

namespace mlos {

class ReadLog;

struct ClaimRequest {
  PlacementRequest placement;
  std::string label;
  int priority = 0;  // MLOS_PRIORITY_MIN..MAX (the daemon scales CPU weights by it)
  // Made by `mlos run` for a process and its descendants (see Claim::envelope).
  bool envelope = false;
  // Policy modules to attach with the grant, name -> config object (the
  // request fails, granting nothing, if one cannot be attached). mlosd
  // serves them, and the embedded engine with its policy service.
  nlohmann::json policies = nlohmann::json::object();
  // The GPU share file `mlos run --gpu-memory/--gpu-share` made for the
  // job (src/gpushare/share_file.h): mlosd reads the job's GPU accounting
  // from it. "" = none.
  std::string gpu_share_file;
};

// Where a job publishes its phases for another process to follow (mlosd's
// phase page). publish() is called under the job's mutex on every
// set_phase: it must be cheap and make no system call.
class PhaseSink {
 public:
  virtual ~PhaseSink() = default;
  virtual void publish(mlos_training_phase_t phase, uint64_t now_ns) = 0;
  // Activity of the job, from any thread and without the job's mutex
  // (collectives run on the caller's threads, async checkpoint saves
  // complete on the writer's thread): a finished barrier or all-reduce
  // (`bytes` 0 for a failed one or a barrier), a checkpoint made durable.
  // Each adds to counters that only grow; lock-free, no system call. The
  // default, for a sink without counters, ignores them.
  virtual void count_collective(uint64_t /*bytes*/, uint64_t /*ns*/) {}
  virtual void count_checkpoint(uint64_t /*bytes*/, uint64_t /*ns*/) {}
};

struct Grant {
  uint64_t claim_id = 0;  // 0 when the claim could not be recorded
  Placement placement;
  // Set when the grant is weaker than asked (e.g. the ledger was unusable,
  // so other processes cannot see this shared claim); says why.
  std::string ledger_note;
  // Set when the CPUs granted are fewer than asked because the process is
  // a local rank and its share is smaller (MLOS_EFFECT_AFFINITY); says why.
  std::string affinity_note;
  // Set by brokers that follow phases (mlosd; the embedded engine's policy
  // service); null otherwise.
  std::shared_ptr<PhaseSink> phase_sink;
  // Where the job's reads and read plans go for its policies (the embedded
  // engine's policy service); null where no engine collects them (mlosd
  // does not yet): record_read is then UNSUPPORTED.
  std::shared_ptr<ReadLog> read_log;
  // The policy modules the job uses from the start: those asked for and
  // the engine's defaults.
  std::vector<std::string> policies;
};

class ClaimBroker {
 public:
  virtual ~ClaimBroker() = default;
  // Plans and records a claim atomically with respect to other processes.
  virtual Result<Grant> acquire(const ClaimRequest& request) = 0;
  // Drops a claim of the calling process; unknown ids and other processes'
  // claims are left alone and are not an error (the claim may have been
  // reclaimed already).
  virtual Status release(uint64_t claim_id) = 0;
  // Where acquire(request) would place the claim now, recording nothing
  // (`mlos run --dry-run`). UNSUPPORTED for a broker that cannot say.
  virtual Result<Placement> plan(const ClaimRequest& request);
  // "embedded" or "daemon": which book the claims go into.
  virtual const char* engine() const = 0;
  virtual const Topology& topology() const = 0;
  // CPUs the process may use (outer bound of every placement).
  virtual CpuSet allowed_cpus() const = 0;
  // Where the memory-pressure level of `grant`'s job comes from (asked on
  // the job's first callback registration). The default measures in this
  // process (LocalPressureFeed); mlosd's broker asks the daemon.
  virtual Result<std::unique_ptr<PressureFeed>> pressure_feed(const Grant& grant, uint64_t memory_bytes,
                                                              const MemoryThresholds& thresholds);

  // Policy modules of the claim `claim_id` (docs/api.md, "Policy
  // modules"): attach `name` with `config` (a JSON object) and return the
  // names the job uses now; detach it (NOT_FOUND if the job does not use
  // it); what the job's policies advise now. The default, for a broker
  // that serves none: UNSUPPORTED (no_policy_service()).
  virtual Result<std::vector<std::string>> request_policy(uint64_t claim_id, const std::string& name,
                                                          const nlohmann::json& config);
  virtual Status release_policy(uint64_t claim_id, const std::string& name);
  virtual Result<PolicyAdvice> advice(uint64_t claim_id);
};

}  // namespace mlos
