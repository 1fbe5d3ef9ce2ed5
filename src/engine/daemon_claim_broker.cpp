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
#include "protocol/grant.h"

namespace mlos {

using nlohmann::json;

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
protocol::GrantRequest grant_request(const ClaimRequest& request, const CpuSet& allowed) {
  protocol::GrantRequest g;
  g.placement = request.placement;
  g.priority = request.priority;
  g.label = request.label;
  g.envelope = request.envelope;
  g.allowed = allowed;
  g.policies = request.policies;
  // mlosd resolves CUDA_VISIBLE_DEVICES against NVML's GPUs, which this
  // process need not load (sent only with GPUs asked for).
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) g.cuda_visible_devices = visible;
  g.gpu_share_file = request.gpu_share_file;
  return g;
}

}  // namespace

Result<Placement> DaemonClaimBroker::plan(const ClaimRequest& request) {
  protocol::GrantRequest asked = grant_request(request, allowed_);
  asked.dry_run = true;
  auto reply = call("request", protocol::encode_grant_request(asked), -1);
  if (!reply) return reply.error();
  auto planned = protocol::decode_grant_reply(*reply);
  if (!planned) return planned.error();
  return std::move(planned->placement);
}

Result<Grant> DaemonClaimBroker::acquire(const ClaimRequest& request) {
  std::shared_ptr<PagePhaseSink> sink;
  protocol::GrantRequest asked = grant_request(request, allowed_);
  if (!request.envelope) {
    auto page = os::SharedPage::create("mlos-phase");
    if (!page) return page.error();
    sink = std::make_shared<PagePhaseSink>(std::move(*page), os::monotonic_ns());
    asked.page_fd = sink->fd();
  }
  auto reply = call("request", protocol::encode_grant_request(asked), sink ? sink->fd() : -1);
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
  auto granted = protocol::decode_grant_reply(*reply);
  if (!granted) return granted.error();
  Grant g;
  g.claim_id = granted->job;
  std::string notes;
  for (const std::string& n : granted->notes) {
    // The GPU note is the placement's (an affinity note of the job).
    if (n != granted->placement.gpu_note) notes += (notes.empty() ? "" : "; ") + n;
  }
  g.placement = std::move(granted->placement);
  g.ledger_note = notes;
  g.phase_sink = sink;
  g.policies = std::move(granted->policies);
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
