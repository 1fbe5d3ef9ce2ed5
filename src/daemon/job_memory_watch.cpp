#include "daemon/job_memory_watch.h"

#include <sys/epoll.h>
#include <unistd.h>

namespace mlos::daemon {

void JobMemoryWatch::arm(os::CgroupDriver* cgroups, const std::string& cgroup, uint64_t limit) {
  wakeups_.clear();
  note_.clear();
  if (!cgroups) return;
  if (limit > 0) {
    for (double headroom : {thresholds().moderate_headroom, thresholds().critical_headroom}) {
      auto fd =
          cgroups->memory_threshold_event(cgroup, static_cast<uint64_t>(static_cast<double>(limit) * (1 - headroom)));
      if (!fd) break;  // v2, fakes: sampling and PSI triggers
      wakeups_.push_back({std::move(*fd), MLOS_MEMORY_PRESSURE_NORMAL, true});
    }
  }
  for (auto [kind, means] : {std::pair{"some", MLOS_MEMORY_PRESSURE_MODERATE},
                             std::pair{"full", MLOS_MEMORY_PRESSURE_CRITICAL}}) {
    std::string rounded;
    auto fd = cgroups->memory_pressure_trigger(cgroup, kind, uint64_t{thresholds().psi_trigger_stall_ms} * 1000,
                                               uint64_t{thresholds().psi_trigger_window_ms} * 1000, &rounded);
    if (fd) {
      wakeups_.push_back({std::move(*fd), means, false});
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
  for (auto& w : wakeups_) {
    if (w.fd.get() != fd) continue;
    if (w.is_eventfd) {
      uint64_t count;
      (void)!read(fd, &count, sizeof count);
    }
    tracker_.kernel_event(w.means, now_ns);
  }
}

std::vector<JobMemoryWatch::WakeFd> JobMemoryWatch::wake_fds() const {
  std::vector<WakeFd> out;
  for (const auto& w : wakeups_) out.push_back({w.fd.get(), w.is_eventfd ? uint32_t{EPOLLIN} : uint32_t{EPOLLPRI}});
  return out;
}

}  // namespace mlos::daemon
