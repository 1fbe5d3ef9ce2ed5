/* SPDX-License-Identifier: Apache-2.0 */
// The embedded engine's pressure feed: figures measured in this process.
//
// Sources, each optional (a missing one becomes a note, never a failure):
//  - the nearest memory cgroup with a limit: working set against the limit,
//    sampled; on v1 also eventfds that wake the watcher the moment usage
//    crosses either level's threshold, and vmpressure "medium"/"critical"
//    events (MODERATE / CRITICAL for hold_ms);
//  - the node: MemAvailable against MemTotal;
//  - the job's own budget (memory_bytes): its anonymous resident memory;
//  - PSI: avg10 of /proc/pressure/memory (a v2 cgroup's memory.pressure when
//    the job has one), and triggers on the same file ("some" stall ->
//    MODERATE, "full" stall -> CRITICAL) so a stall wakes the watcher.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>

#include "engine/pressure_feed.h"
#include "os/memory_sources.h"
#include "os/unique_fd.h"

namespace mlos {

class LocalPressureFeed final : public PressureFeed {
 public:
  // `job_budget` 0: the job declared no memory_bytes. `wakeups` false: no
  // kernel triggers are armed (fds() is empty), for a caller that only
  // samples (the embedded policies' figures).
  LocalPressureFeed(pid_t pid, uint64_t job_budget, const MemoryThresholds& t, std::string proc_root = "/proc",
                    bool wakeups = true);

  std::vector<WaitFd> fds() const override;
  void on_ready(int fd, uint64_t now_ns) override;
  Result<PressureReport> sample(uint64_t now_ns) override;
  uint32_t sample_ms() const override { return tracker_.thresholds().sample_ms; }
  Status set_thresholds(const MemoryThresholds& t) override;
  std::string notes() const override;

 private:
  // (Re)creates every wake-up source for the current thresholds.
  void arm();
  void note(const std::string& key, const std::string& reason) { notes_[key] = reason; }

  const pid_t pid_;
  const bool wakeups_enabled_;
  const uint64_t job_budget_;
  const std::string proc_root_;
  std::optional<os::MemoryCgroup> cgroup_;
  os::PressureWakeups wakeups_;
  PressureLevelTracker tracker_;
  std::map<std::string, std::string> notes_;
};

}  // namespace mlos
