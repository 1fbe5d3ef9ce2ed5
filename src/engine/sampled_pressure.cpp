// SPDX-License-Identifier: Apache-2.0
#include "engine/sampled_pressure.h"

#include <unistd.h>

#include <memory>
#include <utility>

#include "engine/job.h"
#include "engine/local_pressure_feed.h"
#include "os/monotonic_clock.h"

namespace mlos {

std::function<std::optional<int>()> sampled_pressure(uint64_t memory_bytes, int interval_ms) {
  auto feed = std::make_shared<LocalPressureFeed>(getpid(), memory_bytes, MemoryThresholds{}, "/proc",
                                                  /*wakeups=*/false);
  auto last = std::make_shared<std::pair<uint64_t, std::optional<int>>>(0, std::nullopt);
  const uint64_t interval_ns = static_cast<uint64_t>(interval_ms) * 1000000;
  return [feed, last, interval_ns]() -> std::optional<int> {
    const uint64_t now = os::monotonic_ns();
    if (last->first != 0 && now - last->first < interval_ns) return last->second;
    auto report = feed->sample(now);
    *last = {now, report ? std::optional<int>(report->level) : std::nullopt};
    return last->second;
  };
}

}  // namespace mlos
