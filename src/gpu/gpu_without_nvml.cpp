// SPDX-License-Identifier: Apache-2.0
// The GPU manager of a build without nvml.h (CMake found none: see
// cmake/find_nvml_header.cmake): no NVML can be loaded, so there are no
// GPUs, and every caller is told why. Linked instead of nvml_library.cpp
// and gpu_inventory.cpp.
#include "gpu/gpu_inventory.h"
#include "gpu/nvml_library.h"

namespace mlos::gpu {

struct NvmlFunctions {};

namespace {
constexpr const char* kWhy =
    "this mlOS was built without NVML's header (nvml.h; scripts/setup.sh installs it, or set MLOS_NVML_INCLUDE_DIR), "
    "so it cannot use NVIDIA GPUs";
}  // namespace

NvmlLibrary::NvmlLibrary() = default;
NvmlLibrary::~NvmlLibrary() = default;

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open() { return make_error(MLOS_ERR_UNSUPPORTED, kWhy); }

std::string NvmlLibrary::describe(const char* call, int nvml_return) const {
  return std::string(call) + ": NVML error " + std::to_string(nvml_return);
}

GpuInventory read_gpu_inventory(const NvmlLibrary& /*nvml*/, const std::string& /*sysfs_pci_devices*/,
                                bool /*locality*/) {
  GpuInventory inv;
  inv.absent_reason = kWhy;
  return inv;
}

GpuInventory discover_gpus(const std::string& /*sysfs_pci_devices*/) {
  GpuInventory inv;
  inv.absent_reason = kWhy;
  return inv;
}

}  // namespace mlos::gpu
