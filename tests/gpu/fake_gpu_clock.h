/* SPDX-License-Identifier: Apache-2.0 */
// A simulated GPU's timeline, shared by the fake CUDA driver (which runs
// "kernels" on it) and the fake NVML (which reports utilization from it),
// across every process of a test: a file named by $MLOS_FAKE_GPU_CLOCK,
// mapped shared and locked with flock. Each device runs one kernel at a
// time, in launch order, like a GPU's single hardware queue; a launch
// waits until its kernel can start. Times are CLOCK_MONOTONIC nanoseconds.
// Test code only.
#pragma once

#include <cstdint>
#include <map>

namespace mlos::fake {

// Runs a kernel of `duration_ns` for `pid` on `device`: books it after the
// device's last kernel and returns when it starts. false without a clock.
bool run_kernel(int device, int pid, int64_t duration_ns);
// When `pid`'s last kernel on `device` ends (0 if none): what a
// synchronize waits for.
int64_t last_kernel_end(int device, int pid);
// The busy nanoseconds of each pid on `device` within [from_ns, to_ns).
// false without a clock.
bool busy_by_pid(int device, int64_t from_ns, int64_t to_ns, std::map<int, int64_t>* out);

int64_t monotonic_ns();

}  // namespace mlos::fake
