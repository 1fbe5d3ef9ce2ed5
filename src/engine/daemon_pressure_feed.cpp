// SPDX-License-Identifier: Apache-2.0
#include "engine/daemon_pressure_feed.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/memory_pressure_json.h"

namespace mlos {

using nlohmann::json;

Result<std::unique_ptr<DaemonPressureFeed>> DaemonPressureFeed::open(std::shared_ptr<DaemonClaimBroker> broker,
                                                                     uint64_t job,
                                                                     std::optional<MemoryThresholds> thresholds) {
  os::UniqueFd doorbell(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!doorbell.valid()) return make_sys_error(errno, "eventfd for mlosd's memory notifications");
  std::unique_ptr<DaemonPressureFeed> feed(
      new DaemonPressureFeed(std::move(broker), job, std::move(doorbell), thresholds));
  if (Status s = feed->watch(); !s) return s.error();
  return feed;
}

Status DaemonPressureFeed::watch() {
  json args{{"job", job_}, {"event_fd", doorbell_.get()}};
  if (thresholds_) args["thresholds"] = thresholds_to_json(*thresholds_);
  auto reply = broker_->call("watch_memory", args, doorbell_.get());
  if (!reply) return reply.error();
  auto r = report_from_json(reply->value("report", json()));
  if (!r) return r.error();
  report_ = *r;
  stale_ = false;
  return Status::Ok();
}

Status DaemonPressureFeed::query() {
  auto reply = broker_->call("memory_status", json{{"job", job_}}, -1);
  if (!reply) return reply.error();
  // A restarted mlosd that could not take the doorbell again forgot the
  // watch: renew it.
  if (!reply->value("watching", false)) return watch();
  auto r = report_from_json(reply->value("report", json()));
  if (!r) return r.error();
  report_ = *r;
  stale_ = false;
  return Status::Ok();
}

std::vector<PressureFeed::WaitFd> DaemonPressureFeed::fds() const { return {{doorbell_.get(), POLLIN}}; }

void DaemonPressureFeed::on_ready(int fd, uint64_t /*now_ns*/) {
  uint64_t rings;
  (void)!read(fd, &rings, sizeof rings);
  stale_ = true;
}

Result<PressureReport> DaemonPressureFeed::sample(uint64_t now_ns) {
  if (stale_ || now_ns - last_query_ns_ >= uint64_t{kHeartbeatMs} * 1000000) {
    last_query_ns_ = now_ns;
    if (Status s = query(); !s) {
      note_ = "mlosd's memory reports: " + s.error().describe();
      if (!report_) return s.error();
    } else {
      note_.clear();
    }
  }
  return *report_;
}

Status DaemonPressureFeed::set_thresholds(const MemoryThresholds& t) {
  thresholds_ = t;
  return watch();
}

}  // namespace mlos
