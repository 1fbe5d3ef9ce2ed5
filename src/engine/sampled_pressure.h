/* SPDX-License-Identifier: Apache-2.0 */
// This process's memory-pressure level for the embedded policies' figures:
// a LocalPressureFeed without kernel triggers (the memory cgroup's working
// set against its limit, the node, the job's own budget), sampled on
// demand and at most every `interval_ms`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace mlos {

// The sampler of a job with `memory_bytes` (0: none declared); it returns
// a mlos_memory_pressure_level_t, or nullopt when no figure can be read.
// Not thread-safe: one caller (the policy thread).
std::function<std::optional<int>()> sampled_pressure(uint64_t memory_bytes, int interval_ms);

}  // namespace mlos
