// The embedded engine's broker: plans against the node's claim ledger file
// and records the claim in it, all under the ledger's lock.
#pragma once

#include <functional>
#include <memory>

#include "engine/claim_broker.h"
#include "os/ledger_file.h"

namespace mlos {

class LedgerClaimBroker final : public ClaimBroker {
 public:
  using MemoryProbe = std::function<MemoryAvailability()>;

  // `allowed`: the process's CPUs; `memory`: called under the ledger lock
  // for each request; `owner_pid`: the process claims belong to, 0 for
  // "whichever process calls" (read at each call, so a forked child's claims
  // are its own, not its parent's).
  LedgerClaimBroker(Topology topology, CpuSet allowed, os::LedgerFile ledger, MemoryProbe memory, int owner_pid);

  // The broker for this process: shared_topology(), the main thread's
  // affinity at first use (MLOS_ALLOWED_CPUS overrides it for synthetic and
  // XML topologies only), default_runtime_dir().
  static Result<std::shared_ptr<LedgerClaimBroker>> for_this_process();

  // Both refuse a request with policies (UNSUPPORTED, policies_need_daemon()):
  // no policy host runs in embedded mode in this version.
  Result<Grant> acquire(const ClaimRequest& request) override;
  // Plans against the current ledger without recording anything (dry run).
  Result<Placement> plan(const ClaimRequest& request) override;
  const char* engine() const override { return "embedded"; }
  Status release(uint64_t claim_id) override;
  const Topology& topology() const override { return topology_; }
  CpuSet allowed_cpus() const override { return allowed_; }
  const os::LedgerFile& ledger() const { return ledger_; }

 private:
  Topology topology_;
  CpuSet allowed_;
  os::LedgerFile ledger_;
  MemoryProbe memory_;
  int owner_pid() const;
  int owner_pid_;
};

}  // namespace mlos
