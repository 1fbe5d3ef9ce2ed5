// mlosd's memory watching of one job: the level of the job's cgroup (its
// working set against memory_bytes) and of the node, kept with hysteresis,
// and a doorbell rung for the owner when the level changes. The doorbell is
// an eventfd the owner passed with watch_memory; the owner then asks for the
// figures with memory_status. On v1 the kernel wakes the daemon the moment
// usage crosses a level's threshold (cgroup.event_control), so a change does
// not wait for the next sample.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory_pressure.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/unique_fd.h"

namespace mlos::daemon {

class JobMemoryWatch {
 public:
  JobMemoryWatch(os::UniqueFd doorbell, const MemoryThresholds& t) : doorbell_(std::move(doorbell)), tracker_(t) {}

  // (Re)registers the threshold wake-ups on `cgroup` for a limit of
  // `limit` bytes (none when the driver cannot, or limit is 0).
  void arm(os::CgroupDriver* cgroups, const std::string& cgroup, uint64_t limit);
  // Folds in a sample; rings the doorbell when the level changed.
  void observe(const MemoryFigures& f, uint64_t now_ns);
  // Consumes a threshold wake-up.
  void drain(int fd);

  const PressureReport& report() const { return tracker_.report(); }
  const MemoryThresholds& thresholds() const { return tracker_.thresholds(); }
  std::vector<int> wake_fds() const;
  uint64_t doorbell_rings() const { return rings_; }

 private:
  os::UniqueFd doorbell_;
  PressureLevelTracker tracker_;
  std::vector<os::UniqueFd> wakeups_;
  uint64_t rings_ = 0;
};

}  // namespace mlos::daemon
