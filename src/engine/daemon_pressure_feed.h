/* SPDX-License-Identifier: Apache-2.0 */
// The daemon engine's pressure feed: mlosd computes the job's level and
// rings an eventfd this process gave it (watch_memory); the watcher thread
// wakes on it and fetches the report (memory_status). A heartbeat query
// every second heals what a daemon restart lost (the watch is renewed when
// mlosd says it is not watching).
#pragma once

#include <memory>
#include <optional>

#include "engine/daemon_claim_broker.h"
#include "engine/pressure_feed.h"
#include "os/unique_fd.h"

namespace mlos {

class DaemonPressureFeed final : public PressureFeed {
 public:
  // `thresholds` nullopt: mlosd's configured defaults apply.
  static Result<std::unique_ptr<DaemonPressureFeed>> open(std::shared_ptr<DaemonClaimBroker> broker, uint64_t job,
                                                          std::optional<MemoryThresholds> thresholds);

  std::vector<WaitFd> fds() const override;
  void on_ready(int fd, uint64_t now_ns) override;
  Result<PressureReport> sample(uint64_t now_ns) override;
  uint32_t sample_ms() const override { return kHeartbeatMs; }
  Status set_thresholds(const MemoryThresholds& t) override;
  std::string notes() const override { return note_; }

 private:
  static constexpr uint32_t kHeartbeatMs = 1000;
  DaemonPressureFeed(std::shared_ptr<DaemonClaimBroker> broker, uint64_t job, os::UniqueFd doorbell,
                     std::optional<MemoryThresholds> thresholds)
      : broker_(std::move(broker)), job_(job), doorbell_(std::move(doorbell)), thresholds_(thresholds) {}
  Status watch();
  Status query();

  std::shared_ptr<DaemonClaimBroker> broker_;
  const uint64_t job_;
  os::UniqueFd doorbell_;
  std::optional<MemoryThresholds> thresholds_;
  std::optional<PressureReport> report_;
  bool stale_ = true;
  uint64_t last_query_ns_ = 0;
  std::string note_;
};

}  // namespace mlos
