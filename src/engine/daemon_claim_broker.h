/* SPDX-License-Identifier: Apache-2.0 */
// The daemon engine's broker: claims are granted by mlosd over its socket.
// Each grant comes with a phase page (a sealed memfd handed to mlosd with
// SCM_RIGHTS) that Job::set_phase writes with plain stores, so phase hints
// cost no round trip; mlosd reads the page on its own schedule.
//
// One connection per process, opened lazily, reopened after a fork (a child
// must not share its parent's connection, whose SO_PEERCRED names the
// parent) and after the daemon restarted.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/claim_broker.h"
#include "protocol/daemon_client.h"

namespace mlos {

class DaemonClaimBroker final : public ClaimBroker, public std::enable_shared_from_this<DaemonClaimBroker> {
 public:
  DaemonClaimBroker(std::string socket_path, Topology topology, CpuSet allowed);

  // The broker for this process if mlosd answers at default_socket_path(),
  // else DAEMON_UNAVAILABLE.
  static Result<std::shared_ptr<DaemonClaimBroker>> for_this_process();

  // A reply lost after the request was sent is DAEMON_UNAVAILABLE and says
  // that mlosd may have granted it (such a job is pruned when this process
  // exits); it is never retried, so nothing is granted twice.
  // An envelope (`mlos run`, which execs its command next) gets no phase
  // page: the command reports phases through the jobs it requests, which
  // nest in the envelope and steer its cgroup.
  Result<Grant> acquire(const ClaimRequest& request) override;
  // mlosd plans the request without granting it ("dry_run").
  Result<Placement> plan(const ClaimRequest& request) override;
  const char* engine() const override { return "daemon"; }
  // Retried once on a fresh connection (release is idempotent on the
  // daemon's side: an unknown job is reported, not acted on).
  Status release(uint64_t claim_id) override;
  const Topology& topology() const override { return topology_; }
  CpuSet allowed_cpus() const override { return allowed_; }
  // mlosd watches the job's memory and rings a doorbell (DaemonPressureFeed).
  Result<std::unique_ptr<PressureFeed>> pressure_feed(const Grant& grant, uint64_t memory_bytes,
                                                      const MemoryThresholds& thresholds) override;

  // Policy modules: the "policy_request", "policy_release" and "advice"
  // ops for the claim (docs/protocol.md). A release that may have been
  // sent is not retried (a second one would be NOT_FOUND); attaching the
  // same config again is harmless on mlosd's side, so requests are.
  Result<std::vector<std::string>> request_policy(uint64_t claim_id, const std::string& name,
                                                  const nlohmann::json& config) override;
  Status release_policy(uint64_t claim_id, const std::string& name) override;
  Result<PolicyAdvice> advice(uint64_t claim_id) override;

  // Runs `op` on the live connection, reconnecting first if needed; retries
  // once on a fresh connection if the request could not be sent at all
  // (never for "request", which must not be granted twice, nor for
  // "policy_release").
  Result<nlohmann::json> call(const std::string& op, const nlohmann::json& args, int pass_fd);

 private:

  const std::string path_;
  const Topology topology_;
  const CpuSet allowed_;
  std::mutex mu_;
  std::optional<protocol::DaemonClient> conn_;
  pid_t conn_pid_ = 0;
};

}  // namespace mlos
