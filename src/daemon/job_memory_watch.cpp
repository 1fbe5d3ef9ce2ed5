// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_memory_watch.h"

#include <unistd.h>

namespace mlos::daemon {

void JobMemoryWatch::arm(os::CgroupDriver* cgroups, const std::string& cgroup, uint64_t limit) {
  wakeups_.clear();
  note_.clear();
  if (!cgroups) return;
  if (limit > 0) {
    for (uint64_t bytes : os::usage_thresholds(limit, thresholds())) {
      auto fd = cgroups->memory_threshold_event(cgroup, bytes);
      if (!fd) break;  // v2, fakes: sampling and PSI triggers
      wakeups_.add_eventfd(std::move(*fd), MLOS_MEMORY_PRESSURE_NORMAL);
    }
  }
  for (const auto& [kind, means] : os::kPsiTriggerKinds) {
    std::string rounded;
    auto fd = cgroups->memory_pressure_trigger(cgroup, kind, uint64_t{thresholds().psi_trigger_stall_ms} * 1000,
                                               uint64_t{thresholds().psi_trigger_window_ms} * 1000, &rounded);
    if (fd) {
      wakeups_.add_psi_trigger(std::move(*fd), means);
      if (!rounded.empty()) note_ = rounded;
    } else if (fd.error().code != MLOS_ERR_UNSUPPORTED) {
      note_ = "PSI trigger on " + cgroup + ": " + fd.error().describe();
    }
  }
}

void JobMemoryWatch::observe(const MemoryFigures& f, uint64_t now_ns) {
  const uint64_t before = tracker_.report().sequence;
  if (tracker_.observe(f, now_ns).sequence == before) return;
  // A full counter (the owner stopped reading) fails with EAGAIN: the owner
  // still learns the level from memory_status when it next reads.
  uint64_t one = 1;
  (void)!write(doorbell_.get(), &one, sizeof one);
}

void JobMemoryWatch::on_ready(int fd, uint64_t now_ns) {
  if (auto means = wakeups_.consume(fd)) tracker_.kernel_event(*means, now_ns);
}

}  // namespace mlos::daemon
