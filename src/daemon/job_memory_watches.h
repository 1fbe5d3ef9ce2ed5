/* SPDX-License-Identifier: Apache-2.0 */
// The memory watches of mlosd's jobs (watch_memory, docs/memory.md): the
// request's arguments, starting a job's watch on its owner's doorbell,
// sampling a job's level from its cgroup and the node, and the kernel
// wake-ups the event loop should wait on. Each job's watch lives in its
// LiveJob (daemon/job_memory_watch.h); this is what they share.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory_pressure.h"
#include "core/status.h"
#include "daemon/live_job.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/unique_fd.h"

namespace mlos::daemon {

class JobMemoryWatches {
 public:
  // `node_memory` null: the node's figures are unknown (a job's cgroup is
  // then all it is judged on).
  JobMemoryWatches(std::shared_ptr<os::CgroupDriver> cgroups, std::function<MemoryFigures()> node_memory,
                   std::function<uint64_t()> now_ns, MemoryThresholds defaults)
      : cgroups_(std::move(cgroups)),
        node_memory_(std::move(node_memory)),
        now_ns_(std::move(now_ns)),
        defaults_(defaults) {}

  // Thresholds for watches that give none (config "memory_pressure").
  void set_defaults(const MemoryThresholds& t) { defaults_ = t; }

  // watch_memory's arguments: job, event_fd (the owner's number of the
  // doorbell it passes), thresholds (optional). INVALID_ARGUMENT naming
  // what is wrong.
  struct Request {
    uint64_t job = 0;
    int owner_fd = -1;
    nlohmann::json thresholds;  // null: the defaults
  };
  static Result<Request> parse(const nlohmann::json& args);

  // Starts (or restarts) `job`'s watch on `doorbell` (it must be an
  // eventfd), records it in the job's record, and samples it once.
  // Returns the level when its policies should hear of it (follow()).
  Result<std::optional<int>> start(LiveJob& job, os::UniqueFd doorbell, int owner_fd,
                                   const nlohmann::json& thresholds);
  // Samples a watched job: its cgroup's working set against its memory
  // and its own stalls (v2), else the node's figures (`node`, nullopt if
  // unknown). Returns the level when it changed since the job's policies
  // were last told of it.
  std::optional<int> follow(LiveJob& job, const std::optional<MemoryFigures>& node);
  // A kernel wake-up `fd` of the job's fired: consumed, then sampled.
  std::optional<int> woke(LiveJob& job, int fd);
  // The node's figures now (nullopt if unknown).
  std::optional<MemoryFigures> node_figures() const;

  // Descriptors the event loop should watch, by job.
  struct Wakeup {
    uint64_t job;
    int fd;
    uint32_t events;  // for epoll
  };
  std::vector<Wakeup> wakeups(const std::map<uint64_t, LiveJob>& jobs) const;
  // Changes whenever wakeups() may have changed (a watch armed, a watched
  // job forgotten), so the event loop resyncs only then.
  uint64_t version() const { return version_; }
  void forgot_watched_job() { ++version_; }

 private:
  std::shared_ptr<os::CgroupDriver> cgroups_;
  std::function<MemoryFigures()> node_memory_;
  std::function<uint64_t()> now_ns_;
  MemoryThresholds defaults_;
  uint64_t version_ = 0;
};

}  // namespace mlos::daemon
