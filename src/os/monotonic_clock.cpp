// SPDX-License-Identifier: Apache-2.0
#include "os/monotonic_clock.h"

#include <chrono>

namespace mlos::os {

uint64_t monotonic_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace mlos::os
