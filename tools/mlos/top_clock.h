/* SPDX-License-Identifier: Apache-2.0 */
// The clocks mlos top reads: seconds for refresh pacing (monotonic) and the
// wall-clock time its header shows.
#pragma once

#include <time.h>

#include <string>

namespace mlos::cli {

inline double monotonic_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// "HH:MM:SS", local time.
inline std::string wall_clock() {
  const time_t now = time(nullptr);
  struct tm local {};
  localtime_r(&now, &local);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
}

}  // namespace mlos::cli
