// SPDX-License-Identifier: Apache-2.0
#include "engine/daemon_claim_broker.h"

#include <unistd.h>

#include <cstdlib>

#include "engine/daemon_pressure_feed.h"
#include "engine/job.h"
#include "engine/page_phase_sink.h"
#include "os/hwloc_topology.h"
#include "os/kernel.h"
#include "os/monotonic_clock.h"
#include "os/process_self.h"
#include "os/shared_page.h"

namespace mlos {

namespace {

using nlohmann::json;

Result<Placement> placement_from(const json& r) {
  try {
    Placement p;
    p.cpus = r.at("cpu_order").get<std::vector<int>>();
    auto set = CpuSet::parse_list(r.at("cpus").get<std::string>());
    if (!set) return set.error();
    p.cpu_set = *set;
    p.nodes = r.at("nodes").get<std::vector<int>>();
    p.primary_node = r.at("primary_node").get<int>();
    p.memory_policy = static_cast<mlos_memory_policy_t>(r.at("memory_policy").get<int>());
    p.physical_cores = r.at("physical_cores").get<int>();
    p.gpus = r.value("gpus", std::vector<std::string>());
    p.gpu_note = r.value("gpu_note", std::string());
    return p;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_VERSION_MISMATCH, std::string("mlosd's grant is not understood: ") + e.what());
  }
}

}  // namespace

DaemonClaimBroker::DaemonClaimBroker(std::string socket_path, Topology topology, CpuSet allowed)
    : path_(std::move(socket_path)), topology_(std::move(topology)), allowed_(std::move(allowed)) {}

Result<std::shared_ptr<DaemonClaimBroker>> DaemonClaimBroker::for_this_process() {
  const std::string path = protocol::default_socket_path();
  auto probe = protocol::DaemonClient::connect(path);
  if (!probe) return probe.error();
  auto topo = os::shared_topology();
  if (!topo) return topo.error();
  auto allowed = os::linux_kernel().affinity(getpid());
  if (!allowed) return allowed.error();
  auto broker = std::make_shared<DaemonClaimBroker>(path, *topo, *allowed);
  broker->conn_.emplace(std::move(*probe));
  broker->conn_pid_ = os::self_pid();
  return broker;
}

Result<json> DaemonClaimBroker::call(const std::string& op, const json& args, int pass_fd) {
  std::lock_guard lock(mu_);
  for (int attempt = 0;; ++attempt) {
    if (!conn_ || conn_pid_ != os::self_pid()) {
      conn_.reset();
      auto c = protocol::DaemonClient::connect(path_);
      if (!c) return c.error();
      conn_.emplace(std::move(*c));
      conn_pid_ = os::self_pid();
    }
    bool sent = false;
    auto reply = conn_->call(op, args, pass_fd, &sent);
    if (reply || reply.error().code != MLOS_ERR_DAEMON_UNAVAILABLE) return reply;
    conn_.reset();
    // A daemon restarted since our last call closed the old connection;
    // the first write to it can still succeed, so "sent" alone does not
    // prove the daemon saw it. Only requests safe to repeat are retried.
    if (attempt > 0 || (sent && (op == "request" || op == "policy_release"))) return reply;
  }
}

namespace {

// `allowed`: the CPUs this process may use (its affinity: taskset, Slurm,
// or its local rank's share), the outer bound mlosd places it in.
json request_args(const ClaimRequest& request, const CpuSet& allowed) {
  const PlacementRequest& p = request.placement;
  json args{{"allowed_cpus", allowed.to_list()},
            {"num_cpus", p.num_cpus},
            {"memory_bytes", p.memory_bytes},
            {"numa_preference", p.numa_preference},
            {"exclusive", p.exclusive},
            {"single_node", p.single_node},
            {"strict_membind", p.strict_membind},
            {"priority", request.priority},
            {"label", request.label},
            {"envelope", request.envelope}};
  // Only when asked for: a mlosd from before policy modules refuses the
  // field, and a request without it must keep working there.
  if (!request.policies.empty()) args["policies"] = request.policies;
  // GPUs likewise: mlosd resolves CUDA_VISIBLE_DEVICES against NVML's
  // GPUs, which this process need not load.
  if (p.gpus.wanted()) {
    args["num_gpus"] = p.gpus.count;
    if (!p.gpus.uuids.empty()) args["gpu_uuids"] = p.gpus.uuids;
    args["exclusive_gpus"] = p.gpus.exclusive;
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) args["cuda_visible_devices"] = visible;
    if (!request.gpu_share_file.empty()) args["gpu_share_file"] = request.gpu_share_file;
  }
  return args;
}

}  // namespace

Result<Placement> DaemonClaimBroker::plan(const ClaimRequest& request) {
  json args = request_args(request, allowed_);
  args["dry_run"] = true;
  auto reply = call("request", args, -1);
  if (!reply) return reply.error();
  return placement_from(*reply);
}

Result<Grant> DaemonClaimBroker::acquire(const ClaimRequest& request) {
  std::shared_ptr<PagePhaseSink> sink;
  json args = request_args(request, allowed_);
  if (!request.envelope) {
    auto page = os::SharedPage::create("mlos-phase");
    if (!page) return page.error();
    sink = std::make_shared<PagePhaseSink>(std::move(*page), os::monotonic_ns());
    args["page_fd"] = sink->fd();
  }
  auto reply = call("request", args, sink ? sink->fd() : -1);
  if (!reply) {
    if (reply.error().code == MLOS_ERR_DAEMON_UNAVAILABLE) {
      return make_sys_error(reply.error().sys_errno,
                            reply.error().message +
                                "; if mlosd received the request it may hold a job for this process, which it "
                                "releases when the process exits",
                            MLOS_ERR_DAEMON_UNAVAILABLE);
    }
    return reply.error();
  }
  auto placement = placement_from(*reply);
  if (!placement) return placement.error();
  Grant g;
  g.claim_id = reply->value("job", uint64_t{0});
  std::string notes;
  for (const auto& n : reply->value("notes", json::array())) {
    // The GPU note is the placement's (an affinity note of the job).
    if (n.is_string() && n.get<std::string>() != placement->gpu_note) {
      notes += (notes.empty() ? "" : "; ") + n.get<std::string>();
    }
  }
  g.placement = std::move(*placement);
  g.ledger_note = notes;
  g.phase_sink = sink;
  for (const auto& n : reply->value("policies", json::array())) {
    if (n.is_string()) g.policies.push_back(n.get<std::string>());
  }
  return g;
}

Result<std::unique_ptr<PressureFeed>> DaemonClaimBroker::pressure_feed(const Grant& grant, uint64_t /*memory_bytes*/,
                                                                       const MemoryThresholds& thresholds) {
  // Built-in defaults defer to mlosd's configured ones.
  std::optional<MemoryThresholds> chosen;
  if (!(thresholds == MemoryThresholds{})) chosen = thresholds;
  auto feed = DaemonPressureFeed::open(shared_from_this(), grant.claim_id, chosen);
  if (!feed) return feed.error();
  return std::unique_ptr<PressureFeed>(std::move(*feed));
}

Result<std::vector<std::string>> DaemonClaimBroker::request_policy(uint64_t claim_id, const std::string& name,
                                                                   const json& config) {
  auto reply = call("policy_request", json{{"job", claim_id}, {"name", name}, {"config", config}}, -1);
  if (!reply) return reply.error();
  std::vector<std::string> names;
  const json& list = reply->value("policies", json::array());
  for (const auto& n : list) {
    if (n.is_string()) names.push_back(n.get<std::string>());
  }
  return names;
}

Status DaemonClaimBroker::release_policy(uint64_t claim_id, const std::string& name) {
  auto reply = call("policy_release", json{{"job", claim_id}, {"name", name}}, -1);
  if (!reply) return reply.error();
  return Status::Ok();
}

Result<PolicyAdvice> DaemonClaimBroker::advice(uint64_t claim_id) {
  auto reply = call("advice", json{{"job", claim_id}}, -1);
  if (!reply) return reply.error();
  if (!reply->contains("advice")) return advice_from_json(json());
  return advice_from_json((*reply)["advice"]);
}

Status DaemonClaimBroker::release(uint64_t claim_id) {
  auto reply = call("release", json{{"job", claim_id}}, -1);
  if (!reply) return reply.error();
  return Status::Ok();
}

}  // namespace mlos
