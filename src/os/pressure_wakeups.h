/* SPDX-License-Identifier: Apache-2.0 */
// The kernel descriptors that wake a memory-pressure watcher, and what each
// one firing means: eventfds (v1 usage thresholds, vmpressure), readable
// with POLLIN and drained on each wake-up, and PSI triggers, which signal
// with POLLPRI (they always report POLLIN, so only POLLPRI may be waited
// for). Shared by the library's watcher thread and mlosd.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/memory_pressure.h"
#include "os/unique_fd.h"

namespace mlos::os {

class PressureWakeups {
 public:
  // A descriptor and the poll(2) events to wait for (the same bits as
  // epoll's EPOLLIN and EPOLLPRI).
  struct WaitFd {
    int fd;
    short events;
  };

  // `means`: the level a firing implies; NORMAL for "sample now" only.
  void add_eventfd(UniqueFd fd, mlos_memory_pressure_level_t means);
  void add_psi_trigger(UniqueFd fd, mlos_memory_pressure_level_t means);
  void clear() { wakeups_.clear(); }

  std::vector<WaitFd> fds() const;
  // Consumes a firing of `fd` (drains an eventfd) and says what it means;
  // nullopt if `fd` is not one of these.
  std::optional<mlos_memory_pressure_level_t> consume(int fd);

 private:
  struct Wakeup {
    UniqueFd fd;
    mlos_memory_pressure_level_t means;
    bool is_eventfd;
  };
  std::vector<Wakeup> wakeups_;
};

// The usage (bytes) at which MODERATE and CRITICAL start under `limit`.
std::array<uint64_t, 2> usage_thresholds(uint64_t limit, const MemoryThresholds& t);

// The PSI trigger kinds and the level each implies: "some" stall ->
// MODERATE, "full" stall -> CRITICAL.
struct PsiTriggerKind {
  const char* kind;
  mlos_memory_pressure_level_t means;
};
inline constexpr std::array<PsiTriggerKind, 2> kPsiTriggerKinds{
    {{"some", MLOS_MEMORY_PRESSURE_MODERATE}, {"full", MLOS_MEMORY_PRESSURE_CRITICAL}}};

}  // namespace mlos::os
