// SPDX-License-Identifier: Apache-2.0
#include "os/pressure_wakeups.h"

#include <poll.h>
#include <unistd.h>

namespace mlos::os {

void PressureWakeups::add_eventfd(UniqueFd fd, mlos_memory_pressure_level_t means) {
  wakeups_.push_back({std::move(fd), means, true});
}

void PressureWakeups::add_psi_trigger(UniqueFd fd, mlos_memory_pressure_level_t means) {
  wakeups_.push_back({std::move(fd), means, false});
}

std::vector<PressureWakeups::WaitFd> PressureWakeups::fds() const {
  std::vector<WaitFd> out;
  for (const auto& w : wakeups_) out.push_back({w.fd.get(), static_cast<short>(w.is_eventfd ? POLLIN : POLLPRI)});
  return out;
}

std::optional<mlos_memory_pressure_level_t> PressureWakeups::consume(int fd) {
  for (auto& w : wakeups_) {
    if (w.fd.get() != fd) continue;
    if (w.is_eventfd) {
      uint64_t count = 0;
      (void)!read(fd, &count, sizeof count);
    }
    return w.means;
  }
  return std::nullopt;
}

std::array<uint64_t, 2> usage_thresholds(uint64_t limit, const MemoryThresholds& t) {
  auto at = [&](double headroom) { return static_cast<uint64_t>(static_cast<double>(limit) * (1.0 - headroom)); };
  return {at(t.moderate_headroom), at(t.critical_headroom)};
}

}  // namespace mlos::os
