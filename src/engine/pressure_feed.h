/* SPDX-License-Identifier: Apache-2.0 */
// Where a job's memory-pressure level comes from: measured in this process
// (embedded engine: LocalPressureFeed) or told by mlosd (daemon engine:
// DaemonPressureFeed). A MemoryWatch thread polls the feed's descriptors and
// asks it for the current report after each wake-up or sample interval.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/memory_pressure.h"
#include "core/status.h"
#include "mlos/training.h"
#include "os/pressure_wakeups.h"

namespace mlos {

// Fills a published info struct up to info->struct_size (which the caller
// has set), from a report.
void fill_pressure_info(const PressureReport& r, mlos_memory_pressure_info_t* info);

class PressureFeed {
 public:
  virtual ~PressureFeed() = default;
  // Descriptors to poll, each with the poll(2) events that mean "look now"
  // (POLLIN for an eventfd, POLLPRI for a PSI trigger, which always
  // reports POLLIN).
  using WaitFd = os::PressureWakeups::WaitFd;
  virtual std::vector<WaitFd> fds() const = 0;
  // `fd` was ready at `now_ns`: consume it.
  virtual void on_ready(int fd, uint64_t now_ns) = 0;
  // The report now; an error only when the feed cannot tell at all (the
  // watcher keeps the last report and notes why).
  virtual Result<PressureReport> sample(uint64_t now_ns) = 0;
  // Longest wait between samples when no descriptor fires.
  virtual uint32_t sample_ms() const = 0;
  // Changes the thresholds (validated by the caller).
  virtual Status set_thresholds(const MemoryThresholds& t) = 0;
  // How watching is degraded (a source missing, a window rounded), one
  // reason per line; "" when fully working.
  virtual std::string notes() const = 0;
};

}  // namespace mlos
