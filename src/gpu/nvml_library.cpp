// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_library.h"

#include <dlfcn.h>

#include <cstdlib>

#include "gpu/nvml_functions.h"
#include "os/environment.h"

namespace mlos::gpu {

namespace {

constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

// The first of `names` the library exports, cast to the pointer's type.
template <typename Fn>
void resolve(void* lib, Fn*& out, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) {
      out = reinterpret_cast<Fn*>(p);
      return;
    }
  }
}

// resolve() for a function every GPU needs: its name is added to
// `missing` when the library lacks it.
template <typename Fn>
void require(void* lib, Fn*& out, const char* name, std::string& missing) {
  resolve(lib, out, {name});
  if (out == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
}

}  // namespace

NvmlLibrary::NvmlLibrary() : fn_(std::make_unique<NvmlFunctions>()) {}

NvmlLibrary::~NvmlLibrary() {
  if (fn_->shutdown != nullptr) fn_->shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::describe(const char* call, int nvml_return) const {
  const char* text = fn_->error_string != nullptr ? fn_->error_string(static_cast<nvmlReturn_t>(nvml_return)) : nullptr;
  return std::string(call) + ": " + (text != nullptr ? text : "unknown error") + " (NVML error " +
         std::to_string(nvml_return) + ")";
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open() {
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary);
  const char* chosen = os::env("MLOS_NVML_LIBRARY");
  lib->path_ = chosen != nullptr && *chosen != '\0' ? chosen : kDefaultLibrary;
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace, where a
  // CUDA application may have its own copy loaded.
  lib->handle_ = dlopen(lib->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* why = dlerror();
    // dlerror names the file: "libnvidia-ml.so.1: cannot open shared object file: ...".
    return make_error(MLOS_ERR_UNSUPPORTED, "NVML could not be loaded (" +
                                                (why != nullptr ? std::string(why) : lib->path_ + ": unknown error") +
                                                "); without the NVIDIA driver there are no GPUs to manage");
  }
  NvmlFunctions& f = *lib->fn_;
  void* h = lib->handle_;
  std::string missing;  // required functions the library lacks
  require(h, f.init, "nvmlInit_v2", missing);
  require(h, f.shutdown, "nvmlShutdown", missing);
  require(h, f.error_string, "nvmlErrorString", missing);
  require(h, f.device_count, "nvmlDeviceGetCount_v2", missing);
  require(h, f.handle_by_index, "nvmlDeviceGetHandleByIndex_v2", missing);
  require(h, f.uuid, "nvmlDeviceGetUUID", missing);
  require(h, f.name, "nvmlDeviceGetName", missing);
  require(h, f.memory, "nvmlDeviceGetMemoryInfo", missing);
  require(h, f.pci_info, "nvmlDeviceGetPciInfo_v3", missing);
  resolve(h, f.driver_version, {"nvmlSystemGetDriverVersion"});
  resolve(h, f.numa_node, {"nvmlDeviceGetNumaNodeId"});
  resolve(h, f.minor_number, {"nvmlDeviceGetMinorNumber"});
  resolve(h, f.cpu_affinity, {"nvmlDeviceGetCpuAffinity"});
  resolve(h, f.mig_mode, {"nvmlDeviceGetMigMode"});
  resolve(h, f.utilization, {"nvmlDeviceGetUtilizationRates"});
  resolve(h, f.compute_processes,
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(h, f.clock_event_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(h, f.power_usage, {"nvmlDeviceGetPowerUsage"});
  resolve(h, f.process_utilization, {"nvmlDeviceGetProcessUtilization"});
  resolve(h, f.temperature, {"nvmlDeviceGetTemperature"});
  if (!missing.empty()) {
    f.shutdown = nullptr;  // never initialised: the destructor must not shut it down
    return make_error(MLOS_ERR_UNSUPPORTED, "NVML at " + lib->path_ + " lacks " + missing +
                                                " (a driver older than NVML's v2 API, or not NVML)");
  }
  if (const nvmlReturn_t r = f.init(); r != NVML_SUCCESS) {
    const std::string why = lib->describe("nvmlInit_v2", r);
    f.shutdown = nullptr;
    return make_error(MLOS_ERR_UNSUPPORTED, "NVML at " + lib->path_ + " did not start: " + why);
  }
  if (f.driver_version != nullptr) {
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (f.driver_version(version, sizeof version) == NVML_SUCCESS) lib->driver_version_ = version;
  }
  return lib;
}

}  // namespace mlos::gpu
