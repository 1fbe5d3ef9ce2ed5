/* SPDX-License-Identifier: Apache-2.0 */
// Whether a buffer handed to a collective lies in GPU memory, and where.
// Free of CUDA's headers: builds without them answer "host memory" always
// (device_buffer_without_cuda.cpp), builds with them ask the driver
// (cuda_driver.cpp).
#pragma once

#include <array>
#include <optional>

namespace mlos::collectives {

struct DeviceBuffer {
  void* context = nullptr;  // the CUcontext it was allocated in
  int ordinal = -1;         // its device as this process numbers it; -1: the driver could not say
  std::array<unsigned char, 16> uuid{};
};

// GPU memory: where it is. Host memory (pageable, pinned or registered),
// managed memory (the CPU reads it in place), a process that has not
// loaded the CUDA driver, or a build without the device path: nullopt.
std::optional<DeviceBuffer> find_device_buffer(const void* data);

}  // namespace mlos::collectives
