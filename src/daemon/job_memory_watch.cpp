#include "daemon/job_memory_watch.h"

#include <unistd.h>

namespace mlos::daemon {

void JobMemoryWatch::arm(os::CgroupDriver* cgroups, const std::string& cgroup, uint64_t limit) {
  wakeups_.clear();
  if (!cgroups || limit == 0) return;
  for (double headroom : {thresholds().moderate_headroom, thresholds().critical_headroom}) {
    auto fd = cgroups->memory_threshold_event(cgroup, static_cast<uint64_t>(static_cast<double>(limit) * (1 - headroom)));
    if (!fd) return;  // sampling alone (v2, --cgroups none, fakes)
    wakeups_.push_back(std::move(*fd));
  }
}

void JobMemoryWatch::observe(const MemoryFigures& f, uint64_t now_ns) {
  const uint64_t before = tracker_.report().sequence;
  if (tracker_.observe(f, now_ns).sequence == before) return;
  // A full counter (the owner stopped reading) fails with EAGAIN: the owner
  // still learns the level from memory_status when it next reads.
  uint64_t one = 1;
  if (write(doorbell_.get(), &one, sizeof one) == sizeof one) ++rings_;
}

void JobMemoryWatch::drain(int fd) {
  uint64_t count;
  (void)!read(fd, &count, sizeof count);
}

std::vector<int> JobMemoryWatch::wake_fds() const {
  std::vector<int> out;
  for (const auto& w : wakeups_) out.push_back(w.get());
  return out;
}

}  // namespace mlos::daemon
