/* SPDX-License-Identifier: Apache-2.0 */
// The NVML functions mlOS calls, as pointers resolved by NvmlLibrary::open.
// Required ones are never null once open() succeeded; optional ones are
// null when the loaded library lacks them (an older driver), and their
// figure is then unknown.
#pragma once

#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

namespace mlos::gpu {

struct NvmlFunctions {
  // Required.
  nvmlReturn_t (*init)(void) = nullptr;                                    // nvmlInit_v2
  nvmlReturn_t (*shutdown)(void) = nullptr;                                // nvmlShutdown
  const char* (*error_string)(nvmlReturn_t) = nullptr;                     // nvmlErrorString
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;                   // nvmlDeviceGetCount_v2
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;  // nvmlDeviceGetHandleByIndex_v2
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;       // nvmlDeviceGetUUID
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;       // nvmlDeviceGetName
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;           // nvmlDeviceGetMemoryInfo
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;        // nvmlDeviceGetPciInfo_v3

  // Optional.
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;                      // nvmlSystemGetDriverVersion
  nvmlReturn_t (*numa_node)(nvmlDevice_t, unsigned int*) = nullptr;                   // nvmlDeviceGetNumaNodeId
  nvmlReturn_t (*minor_number)(nvmlDevice_t, unsigned int*) = nullptr;                // nvmlDeviceGetMinorNumber
  nvmlReturn_t (*cpu_affinity)(nvmlDevice_t, unsigned int, unsigned long*) = nullptr;  // nvmlDeviceGetCpuAffinity
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;      // nvmlDeviceGetMigMode
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;            // nvmlDeviceGetUtilizationRates
  // nvmlDeviceGetComputeRunningProcesses_v3, else _v2 (the same 24-byte
  // nvmlProcessInfo_v2_t).
  nvmlReturn_t (*compute_processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, else the older
  // ...ClocksThrottleReasons (the same bits).
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;  // nvmlDeviceGetPowerUsage (mW)
  // nvmlDeviceGetProcessUtilization: each process's SM share in NVML's
  // recent samples (what a shared GPU's jobs are told apart by).
  nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*,
                                      unsigned long long) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*) = nullptr;  // nvmlDeviceGetTemperature
};

}  // namespace mlos::gpu
