// SPDX-License-Identifier: Apache-2.0
#include "engine/ledger_claim_broker.h"

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "engine/job.h"
#include "engine/policy_report_file.h"
#include "gpu/gpu_topology.h"
#include "os/environment.h"
#include "os/hwloc_topology.h"
#include "os/kernel.h"
#include "os/monotonic_clock.h"
#include "os/process_info.h"

namespace mlos {

LedgerClaimBroker::LedgerClaimBroker(Topology topology, CpuSet allowed, os::LedgerFile ledger, MemoryProbe memory,
                                     int owner_pid, PolicyService policies, GpuDiscovery gpus)
    : topology_(std::move(topology)),
      allowed_(std::move(allowed)),
      ledger_(std::move(ledger)),
      memory_(std::move(memory)),
      gpu_discovery_(std::move(gpus)),
      owner_pid_(owner_pid),
      policies_(std::move(policies)) {
  // The report a killed job's policies left goes with its claim.
  ledger_.on_pruned([dir = policy_report_dir(ledger_.dir())](const Claim& c) {
    remove_policy_report_of(dir, c.id, c.owner.pid);
  });
}

namespace {

// `request` with its GPUs bounded by the envelope it nests in (mlos run's
// claim for this process or an ancestor), as mlosd bounds them: a GPU
// request inside `mlos run` without --gpus then has none to take.
PlacementRequest within_envelope(const ClaimLedger& ledger, const std::vector<ProcessId>& lineage,
                                 PlacementRequest request) {
  const Claim* envelope = request.gpus.wanted() ? ledger.envelope_of(lineage) : nullptr;
  if (envelope != nullptr) request.gpus.narrow_within(envelope->gpus);
  return request;
}

}  // namespace

std::pair<const Topology*, ClaimRequest> LedgerClaimBroker::scope(const ClaimRequest& request) {
  if (!request.placement.gpus.wanted()) return {&topology_, request};
  std::call_once(gpu_once_, [&] { gpu_topology_ = gpu_discovery_ ? gpu_discovery_(topology_) : topology_; });
  ClaimRequest bounded = request;
  bound_by_visible_devices(bounded.placement.gpus, gpu_topology_, std::getenv("CUDA_VISIBLE_DEVICES"));
  return {&gpu_topology_, std::move(bounded)};
}

Result<std::shared_ptr<LedgerClaimBroker>> LedgerClaimBroker::for_this_process() {
  auto topo = os::shared_topology();
  if (!topo) return topo.error();
  CpuSet allowed;
  MemoryProbe memory;
  if (topo->source == "this machine") {
    // The main thread's mask is the process's envelope (taskset, cgroup
    // cpuset, Slurm, Kubernetes all show up there), captured once: threads
    // that libmlos later binds must not shrink it.
    static const Result<CpuSet> envelope = os::linux_kernel().affinity(getpid());
    if (!envelope) return envelope.error();
    allowed = *envelope;
    memory = [t = *topo] { return os::read_memory_availability(t); };
  } else {
    allowed = topo->all_cpus();
    if (const char* env = os::env("MLOS_ALLOWED_CPUS"); env && *env) {
      auto parsed = CpuSet::parse_list(env);
      if (!parsed) return parsed.error();
      allowed = *parsed;
    }
    // A described machine's memory is what it describes.
    MemoryAvailability m;
    m.available_bytes = 0;
    for (const auto& n : topo->nodes) {
      m.available_bytes += n.total_bytes;
      m.node_free_bytes[n.os_index] = n.total_bytes;
    }
    memory = [m] { return m; };
  }
  return std::make_shared<LedgerClaimBroker>(*topo, allowed, os::LedgerFile(os::default_runtime_dir()), memory, 0,
                                             &EmbeddedPolicies::for_this_process, &gpu::with_nvml_gpus);
}

int LedgerClaimBroker::owner_pid() const { return owner_pid_ != 0 ? owner_pid_ : static_cast<int>(getpid()); }

Result<Grant> LedgerClaimBroker::acquire(const ClaimRequest& request) {
  if (!request.policies.empty() && !policies_) return no_policy_service();
  if (request.envelope && !request.policies.empty()) {
    // The process that holds an envelope (mlos run) execs its command,
    // which would end the policy thread: its command's jobs ask instead.
    return make_error(MLOS_ERR_UNSUPPORTED, "an embedded envelope claim keeps no policies (mlos run hands them to "
                                            "its command's jobs through MLOS_JOB_POLICIES)");
  }
  auto grant = record(request);
  if (!grant || !policies_ || request.envelope) return grant;
  const char* every = os::env("MLOS_JOB_POLICIES");
  const bool asked = !request.policies.empty() || (every != nullptr && *every != '\0');
  if (grant->claim_id == 0) {
    if (!asked) return grant;
    return make_error(MLOS_ERR_UNSUPPORTED, "policies need a claim recorded in the ledger: " + grant->ledger_note);
  }
  Status s;
  try {
    s = serve(*grant, request, asked);
  } catch (const std::exception& e) {  // no thread or descriptor for the service, ...
    s = make_error(MLOS_ERR_SYSTEM, std::string("policy service: ") + e.what());
  }
  if (!s) {
    (void)release(grant->claim_id);
    return s.error();
  }
  return grant;
}

Status LedgerClaimBroker::serve(Grant& grant, const ClaimRequest& request, bool asked) {
  const uint64_t id = grant.claim_id;
  Served served;
  served.grant.cpus = grant.placement.cpu_set;
  served.grant.primary_node = grant.placement.primary_node;
  served.grant.recommended_threads = std::max(1, grant.placement.physical_cores);
  served.grant.memory_bytes = request.placement.memory_bytes;
  served.grant.priority = request.priority;
  served.phases = EmbeddedPolicies::make_phase_sink(os::monotonic_ns());
  grant.phase_sink = served.phases;
  served.reads = std::make_shared<ReadLog>();
  grant.read_log = served.reads;
  {
    std::lock_guard lock(mu_);
    served_[id] = served;
  }
  auto service = serving(id);
  if (!service) {
    // Without a service a job runs as it would without policies, unless it
    // (or mlos run, through MLOS_JOB_POLICIES) asked for some.
    return asked ? Status(service.error()) : Status::Ok();
  }
  nlohmann::json requested = (*service)->options().every_job;
  for (const auto& [name, config] : request.policies.items()) requested[name] = config;
  for (const auto& [name, config] : requested.items()) {
    auto attached = (*service)->request(id, name, config);
    if (!attached) return attached.error();  // the caller's release() detaches the others
  }
  (*service)->attach_defaults(id);
  if (auto advice = (*service)->advice(id)) grant.policies = advice->policies;
  return Status::Ok();
}

Result<std::shared_ptr<EmbeddedPolicies>> LedgerClaimBroker::serving(uint64_t claim_id) {
  if (!policies_) return no_policy_service();
  Served served;
  {
    std::lock_guard lock(mu_);
    auto it = served_.find(claim_id);
    if (it == served_.end()) {
      return make_error(MLOS_ERR_INVALID_HANDLE,
                        "claim " + std::to_string(claim_id) + " is not a live claim of this process");
    }
    served = it->second;
  }
  // Without the lock: the service may be busy for seconds (another job's
  // attach), and releases of other claims must not wait for it.
  auto service = policies_();
  if (!service || served.registered) return service;
  if (Status s = (*service)->add_job(claim_id, served.grant, served.phases, served.reads); !s) return s.error();
  bool gone = false;
  {
    std::lock_guard lock(mu_);
    auto it = served_.find(claim_id);
    gone = it == served_.end() || it->second.phases != served.phases;
    if (!gone) it->second.registered = true;
  }
  if (gone) {  // released meanwhile
    (*service)->remove_job(claim_id);
    return make_error(MLOS_ERR_INVALID_HANDLE, "claim " + std::to_string(claim_id) + " was released");
  }
  return service;
}

Result<std::vector<std::string>> LedgerClaimBroker::request_policy(uint64_t claim_id, const std::string& name,
                                                                   const nlohmann::json& config) {
  auto service = serving(claim_id);
  if (!service) return service.error();
  return (*service)->request(claim_id, name, config);
}

Status LedgerClaimBroker::release_policy(uint64_t claim_id, const std::string& name) {
  auto service = serving(claim_id);
  if (!service) return service.error();
  return (*service)->release(claim_id, name);
}

Result<PolicyAdvice> LedgerClaimBroker::advice(uint64_t claim_id) {
  auto service = serving(claim_id);
  if (!service) return service.error();
  return (*service)->advice(claim_id);
}

Result<Grant> LedgerClaimBroker::record(const ClaimRequest& asked) {
  auto [topology, request] = scope(asked);
  auto self = os::process_id(owner_pid());
  if (!self) return self.error();
  const std::vector<ProcessId> my_lineage = os::lineage(owner_pid());
  std::optional<Grant> grant;
  Status s = ledger_.update([&](ClaimLedger& ledger) -> Result<bool> {
    auto placement = plan_placement(*topology, allowed_, ledger.usage_for(my_lineage), memory_(),
                                    within_envelope(ledger, my_lineage, request.placement));
    if (!placement) return placement.error();
    Claim c;
    c.owner = *self;
    c.uid = static_cast<uint32_t>(geteuid());
    c.cpus = placement->cpu_set;
    c.exclusive = request.placement.exclusive;
    c.envelope = request.envelope;
    c.numa_node = placement->primary_node;
    c.memory_bytes = request.placement.memory_bytes;
    c.label = request.label;
    c.created_unix = static_cast<int64_t>(time(nullptr));
    c.gpus = placement->gpus;
    c.gpus_exclusive = request.placement.gpus.exclusive;
    grant = Grant{ledger.add(std::move(c)), std::move(placement.value())};
    return true;
  });
  if (s) return std::move(*grant);
  // The ledger itself is unusable (read-only or missing runtime dir, ...).
  // A shared claim can still be placed privately, as plain Linux would run
  // the job anyway; an exclusive one cannot be honoured without the ledger.
  const int code = s.error().code;
  if (code != MLOS_ERR_SYSTEM && code != MLOS_ERR_PERMISSION) return s.error();
  if (request.placement.gpus.wanted()) {
    return make_error(MLOS_ERR_UNSUPPORTED, "GPU claims need the claim ledger, which is unusable: " +
                                                s.error().describe() + " (set MLOS_RUNTIME_DIR to a writable directory)");
  }
  if (request.placement.exclusive) {
    return make_error(MLOS_ERR_UNSUPPORTED, "exclusive CPUs need the claim ledger, which is unusable: " +
                                                s.error().describe() + " (set MLOS_RUNTIME_DIR to a writable directory)");
  }
  // Other claims are still respected where the ledger can at least be read
  // (e.g. a root-owned ledger and an unprivileged caller).
  auto readable = ledger_.read();
  CpuUsage usage = readable ? readable->usage_for(my_lineage) : CpuUsage{};
  auto placement = plan_placement(*topology, allowed_, usage, memory_(), request.placement);
  if (!placement) return placement.error();
  return Grant{0, std::move(placement.value()),
               "claim not recorded, other processes cannot see it: " + s.error().describe() +
                   (readable ? std::string(" (existing claims were respected)")
                             : "; existing claims could not be read either: " + readable.error().describe())};
}

Result<Placement> LedgerClaimBroker::plan(const ClaimRequest& asked) {
  if (!asked.policies.empty() && !policies_) return no_policy_service();
  auto [topology, request] = scope(asked);
  auto ledger = ledger_.read();
  if (!ledger) return ledger.error();
  const std::vector<ProcessId> my_lineage = os::lineage(owner_pid());
  return plan_placement(*topology, allowed_, ledger->usage_for(my_lineage), memory_(),
                        within_envelope(*ledger, my_lineage, request.placement));
}

Status LedgerClaimBroker::release(uint64_t claim_id) {
  bool registered = false;
  {
    std::lock_guard lock(mu_);
    if (auto it = served_.find(claim_id); it != served_.end()) {
      registered = it->second.registered;
      served_.erase(it);
    }
  }
  if (registered) {
    if (auto service = policies_()) (*service)->remove_job(claim_id);
  }
  auto self = os::process_id(owner_pid());
  if (!self) return self.error();
  return ledger_.update([&](ClaimLedger& ledger) -> Result<bool> {
    // Only the owner drops a claim (a forked child holding a copy of the
    // handle must not free its parent's CPUs).
    const Claim* c = ledger.find(claim_id);
    return c != nullptr && c->owner == *self && ledger.remove(claim_id);
  });
}

}  // namespace mlos
