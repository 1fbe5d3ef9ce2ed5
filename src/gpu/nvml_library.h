/* SPDX-License-Identifier: Apache-2.0 */
// NVML (the NVIDIA Management Library, libnvidia-ml.so.1, part of the
// driver), loaded at run time with dlopen: libmlos, mlosd and mlos have no
// link-time dependency on the driver, and a machine without it has no GPUs
// (with the reason), never a failure to start.
//
// Only NVML's types come from nvml.h (PyPI's nvidia-nvml-dev, extracted by
// scripts/setup.sh; built without it, open() is UNSUPPORTED saying so).
// Functions are looked up by their versioned names (nvmlInit_v2,
// nvmlDeviceGetPciInfo_v3, ...), the ones nvml.h maps the plain names to,
// so an old driver's library without a newer function loses that figure,
// not the GPU. $MLOS_NVML_LIBRARY names another library (tests load
// tests/gpu/fake_nvml, as DCGM's tests load their NVML injection library).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace mlos::gpu {

struct NvmlFunctions;  // nvml_functions.h, for the readers of the library

class NvmlLibrary {
 public:
  // dlopen + nvmlInit_v2. UNSUPPORTED, with the reason, when the library
  // cannot be loaded, lacks the functions every GPU needs (count, handle,
  // UUID, name, memory, PCI info), or nvmlInit_v2 fails (no driver loaded,
  // no permission): nvmlErrorString's text and the code.
  static Result<std::unique_ptr<NvmlLibrary>> open();
  ~NvmlLibrary();  // nvmlShutdown, dlclose
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return *fn_; }
  // The path or soname that was loaded, and the driver's version ("" if
  // NVML does not say).
  const std::string& path() const { return path_; }
  const std::string& driver_version() const { return driver_version_; }
  // "nvmlDeviceGetUUID: <NVML's error string> (NVML error N)".
  std::string describe(const char* call, int nvml_return) const;

 private:
  NvmlLibrary();
  void* handle_ = nullptr;
  std::unique_ptr<NvmlFunctions> fn_;
  std::string path_;
  std::string driver_version_;
};

}  // namespace mlos::gpu
