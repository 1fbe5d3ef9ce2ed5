/* SPDX-License-Identifier: Apache-2.0 */
// The embedded engine's broker: plans against the node's claim ledger file
// and records the claim in it, all under the ledger's lock.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "engine/claim_broker.h"
#include "engine/embedded_policies.h"
#include "os/ledger_file.h"

namespace mlos {

class LedgerClaimBroker final : public ClaimBroker {
 public:
  using MemoryProbe = std::function<MemoryAvailability()>;
  // The policy service for this process's jobs, asked at every grant (its
  // error, e.g. no policy host installed, refuses requested policies and
  // leaves a job without defaults). Null: policies are UNSUPPORTED.
  using PolicyService = std::function<Result<std::shared_ptr<EmbeddedPolicies>>()>;
  // The topology with the GPUs requests may claim, made from the one given
  // (gpu::with_nvml_gpus), asked at the first request for GPUs. Null: the
  // topology given already has them (tests).
  using GpuDiscovery = std::function<Topology(const Topology&)>;

  // `allowed`: the process's CPUs; `memory`: called under the ledger lock
  // for each request; `owner_pid`: the process claims belong to, 0 for
  // "whichever process calls" (read at each call, so a forked child's claims
  // are its own, not its parent's).
  LedgerClaimBroker(Topology topology, CpuSet allowed, os::LedgerFile ledger, MemoryProbe memory, int owner_pid,
                    PolicyService policies = nullptr, GpuDiscovery gpus = nullptr);

  // The broker for this process: shared_topology(), the main thread's
  // affinity at first use (MLOS_ALLOWED_CPUS overrides it for synthetic and
  // XML topologies only), default_runtime_dir(),
  // EmbeddedPolicies::for_this_process(), and NVML's GPUs. A request for
  // GPUs may claim only those its CUDA_VISIBLE_DEVICES shows, if set.
  static Result<std::shared_ptr<LedgerClaimBroker>> for_this_process();

  // With a policy service, a recorded claim gets the requested policies and
  // the service's every-job ones (the first that cannot be attached undoes
  // the claim and is the error) and the service's defaults, and its phases
  // are followed. Envelope claims (mlos run) get none and refuse requested
  // ones (UNSUPPORTED): the process that holds one execs its command.
  Result<Grant> acquire(const ClaimRequest& request) override;
  // Plans against the current ledger without recording anything (dry run;
  // policies play no part in placement).
  Result<Placement> plan(const ClaimRequest& request) override;
  const char* engine() const override { return "embedded"; }
  Status release(uint64_t claim_id) override;
  // Served by the policy service (UNSUPPORTED without one; INVALID_HANDLE
  // for a claim this broker did not grant in this process).
  Result<std::vector<std::string>> request_policy(uint64_t claim_id, const std::string& name,
                                                  const nlohmann::json& config) override;
  Status release_policy(uint64_t claim_id, const std::string& name) override;
  Result<PolicyAdvice> advice(uint64_t claim_id) override;
  const Topology& topology() const override { return topology_; }
  CpuSet allowed_cpus() const override { return allowed_; }
  const os::LedgerFile& ledger() const { return ledger_; }

 private:
  Topology topology_;
  CpuSet allowed_;
  os::LedgerFile ledger_;
  MemoryProbe memory_;
  int owner_pid() const;
  // What `request` is planned on: the topology, with its GPUs when it
  // asks for some, and the request bounded by CUDA_VISIBLE_DEVICES.
  std::pair<const Topology*, ClaimRequest> scope(const ClaimRequest& request);
  GpuDiscovery gpu_discovery_;
  std::once_flag gpu_once_;
  Topology gpu_topology_;
  // Places and records the claim (acquire() without policies).
  Result<Grant> record(const ClaimRequest& request);
  // Registers a recorded claim with the policy service and attaches the
  // requested policies and the defaults (grant.phase_sink, .policies).
  // `asked`: the request or MLOS_JOB_POLICIES names policies (then a
  // missing service is an error, not a job without policies).
  Status serve(Grant& grant, const ClaimRequest& request, bool asked);
  // The service with `claim_id` registered in it (granted here, not yet
  // released).
  Result<std::shared_ptr<EmbeddedPolicies>> serving(uint64_t claim_id);
  int owner_pid_;
  PolicyService policies_;

  // What each live claim of this process was granted, for registering it
  // with the policy service when it first asks for a policy.
  struct Served {
    EmbeddedPolicies::JobGrant grant;
    std::shared_ptr<PhaseSink> phases;
    std::shared_ptr<ReadLog> reads;
    bool registered = false;  // with the service (add_job)
  };
  std::mutex mu_;
  std::map<uint64_t, Served> served_;
};

}  // namespace mlos
