/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's memory watching of one job: the level of the job's cgroup (its
// working set against memory_bytes, and on v2 its own PSI) and of the node,
// kept with hysteresis, and a doorbell rung for the owner when the level
// changes. The doorbell is an eventfd the owner passed with watch_memory;
// the owner then asks for the figures with memory_status. The kernel wakes
// the daemon between samples where it can: on v1 when usage crosses a
// level's threshold (cgroup.event_control), on v2 when the cgroup's PSI
// trigger fires ("some" stall: MODERATE, "full": CRITICAL).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory_pressure.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/pressure_wakeups.h"
#include "os/unique_fd.h"

namespace mlos::daemon {

class JobMemoryWatch {
 public:
  JobMemoryWatch(os::UniqueFd doorbell, const MemoryThresholds& t) : doorbell_(std::move(doorbell)), tracker_(t) {}

  // (Re)registers the kernel wake-ups on `cgroup` (usage thresholds for a
  // limit of `limit` bytes, PSI triggers), as far as the driver can.
  void arm(os::CgroupDriver* cgroups, const std::string& cgroup, uint64_t limit);
  // Folds in a sample; rings the doorbell when the level changed.
  void observe(const MemoryFigures& f, uint64_t now_ns);
  // A wake-up fired at `now_ns`: consumes it and notes what it means.
  void on_ready(int fd, uint64_t now_ns);

  std::vector<os::PressureWakeups::WaitFd> wake_fds() const { return wakeups_.fds(); }
  const PressureReport& report() const { return tracker_.report(); }
  const MemoryThresholds& thresholds() const { return tracker_.thresholds(); }
  // How the kernel wake-ups are degraded (a window rounded, a trigger
  // refused); "" when all the driver offers is armed.
  const std::string& note() const { return note_; }

 private:
  os::UniqueFd doorbell_;
  PressureLevelTracker tracker_;
  os::PressureWakeups wakeups_;
  std::string note_;
};

}  // namespace mlos::daemon
