// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_memory_watches.h"

#include <stdexcept>

#include "core/json_fields.h"
#include "core/memory_pressure_json.h"
#include "os/memory_sources.h"

namespace mlos::daemon {

using nlohmann::json;

Result<JobMemoryWatches::Request> JobMemoryWatches::parse(const json& args) {
  Request r;
  try {
    if (!args.is_object()) throw std::invalid_argument("arguments must be a JSON object");
    for (const auto& [key, value] : args.items()) {
      if (key != "op" && key != "id" && key != "job" && key != "event_fd" && key != "thresholds") {
        throw std::invalid_argument("unknown field '" + key + "'");
      }
    }
    r.job = non_negative_field(args, "job");
    r.owner_fd = optional_int_field(args, "event_fd", -1);
    if (r.owner_fd < 0) throw std::invalid_argument("event_fd must be the caller's number of the eventfd it passes");
    r.thresholds = args.value("thresholds", json());
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("watch_memory: ") + e.what());
  }
  return r;
}

Result<std::optional<int>> JobMemoryWatches::start(LiveJob& j, os::UniqueFd doorbell, int owner_fd,
                                                   const json& thresholds) {
  auto t = thresholds.is_null() ? Result<MemoryThresholds>(defaults_) : thresholds_from_json(thresholds, defaults_);
  if (!t) return t.error();
  // The doorbell must be an eventfd, and the daemon must never block on it.
  if (Status s = os::check_eventfd(doorbell.get()); !s) return s.error();
  j.memory = std::make_unique<JobMemoryWatch>(std::move(doorbell), *t);
  j.memory->arm(cgroups_.get(), j.record.cgroup(), j.record.memory_bytes);
  if (!j.memory->note().empty()) j.note_once("memory watch: " + j.memory->note());
  j.record.memory_event_fd = owner_fd;
  j.record.memory_thresholds = thresholds;
  ++version_;
  return follow(j, node_figures());
}

std::optional<MemoryFigures> JobMemoryWatches::node_figures() const {
  if (!node_memory_) return std::nullopt;
  return node_memory_();
}

std::optional<int> JobMemoryWatches::follow(LiveJob& j, const std::optional<MemoryFigures>& node) {
  if (!j.memory) return std::nullopt;
  MemoryFigures f = node.value_or(MemoryFigures{});
  bool psi_known = node.has_value();
  if (cgroups_) {
    auto u = cgroups_->usage(j.record.cgroup());
    if (u && u->memory_working_set && j.record.memory_bytes > 0) {
      const uint64_t budget = j.record.memory_bytes, ws = *u->memory_working_set;
      f.consider(budget > ws ? budget - ws : 0, budget, MemorySource::kCgroup);
    }
    // The job's own stalls (v2) rather than the node's.
    if (u && u->memory_psi_some_avg10) {
      f.psi_some_avg10 = *u->memory_psi_some_avg10;
      f.psi_full_avg10 = u->memory_psi_full_avg10.value_or(0);
      psi_known = true;
    }
  }
  if (f.budget_bytes == 0 && !psi_known) return std::nullopt;  // nothing readable: keep the last report
  j.memory->observe(f, now_ns_());
  const int level = static_cast<int>(j.memory->report().level);
  if (level == j.pressure_level_seen) return std::nullopt;
  j.pressure_level_seen = level;
  return level;
}

std::optional<int> JobMemoryWatches::woke(LiveJob& j, int fd) {
  if (!j.memory) return std::nullopt;
  j.memory->on_ready(fd, now_ns_());
  return follow(j, node_figures());
}

std::vector<JobMemoryWatches::Wakeup> JobMemoryWatches::wakeups(const std::map<uint64_t, LiveJob>& jobs) const {
  std::vector<Wakeup> out;
  for (const auto& [id, j] : jobs) {
    if (!j.memory) continue;
    // poll(2)'s POLLIN/POLLPRI have epoll's EPOLLIN/EPOLLPRI values.
    for (auto w : j.memory->wake_fds()) out.push_back({id, w.fd, static_cast<uint32_t>(w.events)});
  }
  return out;
}

}  // namespace mlos::daemon
