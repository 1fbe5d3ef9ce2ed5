// SPDX-License-Identifier: Apache-2.0
// A stand-in for libnvidia-ml.so.1 on machines without a GPU, in the manner
// of DCGM's NVML injection library: it exports the NVML functions mlOS
// calls, under their real (versioned) names and signatures from nvml.h,
// and serves the GPUs described by the JSON file $MLOS_FAKE_NVML, read by
// nvmlInit_v2:
//
//   {"init_error": 0, "driver_version": "550.54.15",
//    "gpus": [{"uuid": "GPU-...", "name": "NVIDIA H200",
//              "memory_total": N, "memory_used": N,
//              "pci": {"domain": 0, "bus": 59, "device": 0},
//              "cpu_affinity": "0-15", "numa_node_id": 2, "mig": 0,
//              "utilization": [gpu %, memory %], "power_mw": N,
//              "temperature": C, "clock_event_reasons": bits,
//              "processes": [{"pid": N, "used": bytes or null}],
//              "process_utilization": [{"pid": N, "sm": percent}],
//              "utilization" is replaced, when $MLOS_FAKE_GPU_CLOCK names the
//              timeline the fake CUDA driver runs kernels on
//              (fake_gpu_clock.h), by that GPU's busy share over the
//              last second, and nvmlDeviceGetProcessUtilization reports
//              each process's share of it,
//              "errors": {"nvmlDeviceGetPowerUsage": 3, ...}}]}
//
// "errors" makes a function fail with that nvmlReturn_t for that GPU; a key
// left out is NOT_SUPPORTED for optional figures. Built twice: as
// libfake-nvml.so (today's NVML) and, with FAKE_NVML_OLD, as
// libfake-nvml-old.so, which lacks the newer functions (clock event
// reasons, _v3 processes, NUMA node id, MIG mode) as an old driver would.
// Test code only; never installed.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_gpu_clock.h"

namespace {

using nlohmann::json;

struct FakeGpu {
  json spec;
};

std::mutex mu;
std::vector<FakeGpu> gpus;
json config;
int init_count = 0;

FakeGpu* gpu_of(nvmlDevice_t d) {
  const auto i = reinterpret_cast<uintptr_t>(d);
  if (i == 0 || i > gpus.size()) return nullptr;
  return &gpus[i - 1];
}

// The error a test configured for `fn` on this GPU, else SUCCESS.
nvmlReturn_t injected(const FakeGpu& g, const char* fn) {
  if (g.spec.contains("errors") && g.spec["errors"].contains(fn)) {
    return static_cast<nvmlReturn_t>(g.spec["errors"][fn].get<int>());
  }
  return NVML_SUCCESS;
}

nvmlReturn_t copy_text(const std::string& s, char* out, unsigned len) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

// The GPU and the configured error for `fn`; UNINITIALIZED before init.
#define FAKE_GPU(dev, fn)                                         \
  std::lock_guard<std::mutex> lock(mu);                           \
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;           \
  FakeGpu* g = gpu_of(dev);                                       \
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;           \
  if (nvmlReturn_t e = injected(*g, fn); e != NVML_SUCCESS) return e

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard<std::mutex> lock(mu);
  const char* path = std::getenv("MLOS_FAKE_NVML");
  if (path == nullptr) return NVML_ERROR_DRIVER_NOT_LOADED;
  std::ifstream in(path);
  if (!in) return NVML_ERROR_DRIVER_NOT_LOADED;
  try {
    config = json::parse(in);
  } catch (const std::exception&) {
    return NVML_ERROR_UNKNOWN;
  }
  if (const int e = config.value("init_error", 0); e != 0) return static_cast<nvmlReturn_t>(e);
  gpus.clear();
  for (const auto& spec : config.value("gpus", json::array())) gpus.push_back({spec});
  ++init_count;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --init_count;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* out, unsigned len) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  return copy_text(config.value("driver_version", std::string("550.54.15")), out, len);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  *count = static_cast<unsigned>(gpus.size());
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* dev) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (i >= gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t e = injected(gpus[i], "nvmlDeviceGetHandleByIndex_v2"); e != NVML_SUCCESS) return e;
  *dev = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(i + 1));
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* dev) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].spec.value("uuid", std::string()) == uuid) {
      *dev = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(i + 1));
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

// Each process's share of the GPU's busy time since `since_us` (at most the
// last second), from the simulated timeline; without one, the spec's
// "process_utilization": [{"pid": N, "sm": percent}]. NOT_FOUND when no
// process ran, as NVML answers without samples.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t dev, nvmlProcessUtilizationSample_t* out, unsigned* count, unsigned long long since_us) {
  FAKE_GPU(dev, "nvmlDeviceGetProcessUtilization");
  int64_t now = mlos::fake::monotonic_ns();
  const int64_t from = std::max<int64_t>(now - 1000000000, static_cast<int64_t>(since_us) * 1000);
  std::map<int, int64_t> busy;
  if (!mlos::fake::busy_by_pid(static_cast<int>(g - gpus.data()), from, now, &busy)) {
    // No timeline: the spec's figures, as shares of a one-second window.
    for (const auto& p : g->spec.value("process_utilization", json::array())) {
      busy[p["pid"].get<int>()] = p["sm"].get<int64_t>() * 10000000;
    }
    if (busy.empty()) return NVML_ERROR_NOT_FOUND;
    now = from + 1000000000;
  }
  if (busy.empty() || now - from < 1000000) return NVML_ERROR_NOT_FOUND;
  if (out == nullptr || *count < busy.size()) {
    *count = static_cast<unsigned>(busy.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  unsigned i = 0;
  for (const auto& [pid, ns] : busy) {
    out[i] = nvmlProcessUtilizationSample_t{};
    out[i].pid = static_cast<unsigned>(pid);
    out[i].timeStamp = static_cast<unsigned long long>(now / 1000);
    out[i].smUtil = static_cast<unsigned>(std::min<int64_t>(100, ns * 100 / (now - from)));
    ++i;
  }
  *count = i;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char* out, unsigned len) {
  FAKE_GPU(dev, "nvmlDeviceGetUUID");
  return copy_text(g->spec.value("uuid", std::string()), out, len);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char* out, unsigned len) {
  FAKE_GPU(dev, "nvmlDeviceGetName");
  return copy_text(g->spec.value("name", std::string("NVIDIA Fake GPU")), out, len);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t* m) {
  FAKE_GPU(dev, "nvmlDeviceGetMemoryInfo");
  m->total = g->spec.value("memory_total", 0ULL);
  m->used = g->spec.value("memory_used", 0ULL);
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t* pci) {
  FAKE_GPU(dev, "nvmlDeviceGetPciInfo_v3");
  const json p = g->spec.value("pci", json::object());
  std::memset(pci, 0, sizeof *pci);
  pci->domain = p.value("domain", 0U);
  pci->bus = p.value("bus", 0U);
  pci->device = p.value("device", 0U);
  pci->pciDeviceId = 0x233510deU;  // vendor 10de (NVIDIA)
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", pci->domain, pci->bus, pci->device);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t dev, unsigned size,
                                                                             unsigned long* words) {
  FAKE_GPU(dev, "nvmlDeviceGetCpuAffinity");
  if (!g->spec.contains("cpu_affinity")) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(words, 0, size * sizeof(unsigned long));
  // "a-b,c" as the kernel writes CPU lists.
  const std::string list = g->spec["cpu_affinity"].get<std::string>();
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string part = list.substr(at, end - at);
    const size_t dash = part.find('-');
    const unsigned lo = static_cast<unsigned>(std::stoul(part.substr(0, dash)));
    const unsigned hi = dash == std::string::npos ? lo : static_cast<unsigned>(std::stoul(part.substr(dash + 1)));
    for (unsigned c = lo; c <= hi && c / 64 < size; ++c) words[c / 64] |= 1UL << (c % 64);
    at = end + 1;
  }
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev,
                                                                                  nvmlUtilization_t* u) {
  FAKE_GPU(dev, "nvmlDeviceGetUtilizationRates");
  const int64_t now = mlos::fake::monotonic_ns();
  std::map<int, int64_t> busy;
  if (mlos::fake::busy_by_pid(static_cast<int>(g - gpus.data()), now - 1000000000, now, &busy)) {
    int64_t sum = 0;
    for (const auto& [pid, ns] : busy) sum += ns;
    u->gpu = static_cast<unsigned>(std::min<int64_t>(100, sum / 10000000));
    u->memory = u->gpu / 2;
    return NVML_SUCCESS;
  }
  if (!g->spec.contains("utilization")) return NVML_ERROR_NOT_SUPPORTED;
  u->gpu = g->spec["utilization"][0].get<unsigned>();
  u->memory = g->spec["utilization"][1].get<unsigned>();
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned* mw) {
  FAKE_GPU(dev, "nvmlDeviceGetPowerUsage");
  if (!g->spec.contains("power_mw")) return NVML_ERROR_NOT_SUPPORTED;
  *mw = g->spec["power_mw"].get<unsigned>();
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev,
                                                                             nvmlTemperatureSensors_t sensor,
                                                                             unsigned* c) {
  FAKE_GPU(dev, "nvmlDeviceGetTemperature");
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (!g->spec.contains("temperature")) return NVML_ERROR_NOT_SUPPORTED;
  *c = g->spec["temperature"].get<unsigned>();
  return NVML_SUCCESS;
}

// The list protocol of nvmlDeviceGetComputeRunningProcesses: with too
// small a buffer, INSUFFICIENT_SIZE and the count needed.
static nvmlReturn_t processes(FakeGpu* g, unsigned* count, nvmlProcessInfo_t* infos) {
  const json list = g->spec.value("processes", json::array());
  if (*count < list.size()) {
    const bool empty = *count == 0 && list.empty();
    *count = static_cast<unsigned>(list.size());
    return empty ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = static_cast<unsigned>(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    infos[i] = nvmlProcessInfo_t{};
    infos[i].pid = list[i]["pid"].get<unsigned>();
    infos[i].usedGpuMemory = list[i]["used"].is_null() ? static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)
                                                       : list[i]["used"].get<unsigned long long>();
    infos[i].gpuInstanceId = 0xFFFFFFFFu;
    infos[i].computeInstanceId = 0xFFFFFFFFu;
  }
  return NVML_SUCCESS;
}

// The clock-event (throttle) reasons, under either of NVML's names.
static nvmlReturn_t clock_event_reasons(FakeGpu* g, unsigned long long* bits) {
  if (!g->spec.contains("clock_event_reasons")) return NVML_ERROR_NOT_SUPPORTED;
  *bits = g->spec["clock_event_reasons"].get<unsigned long long>();
  return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev,
                                                                                            unsigned* count,
                                                                                            nvmlProcessInfo_t* infos) {
  FAKE_GPU(dev, "nvmlDeviceGetComputeRunningProcesses_v2");
  return processes(g, count, infos);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev,
                                                                                              unsigned long long* bits) {
  FAKE_GPU(dev, "nvmlDeviceGetCurrentClocksThrottleReasons");
  return clock_event_reasons(g, bits);
}
#else
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev,
                                                                                            unsigned* count,
                                                                                            nvmlProcessInfo_t* infos) {
  FAKE_GPU(dev, "nvmlDeviceGetComputeRunningProcesses_v3");
  return processes(g, count, infos);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev,
                                                                                           unsigned long long* bits) {
  FAKE_GPU(dev, "nvmlDeviceGetCurrentClocksEventReasons");
  return clock_event_reasons(g, bits);
}

// "minor" in the spec, else the GPU's index (as the driver numbers them).
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned* minor) {
  FAKE_GPU(dev, "nvmlDeviceGetMinorNumber");
  *minor = g->spec.value("minor", static_cast<unsigned>(g - gpus.data()));
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t dev, unsigned* node) {
  FAKE_GPU(dev, "nvmlDeviceGetNumaNodeId");
  if (!g->spec.contains("numa_node_id") || g->spec["numa_node_id"].is_null()) return NVML_ERROR_NOT_SUPPORTED;
  *node = g->spec["numa_node_id"].get<unsigned>();
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned* current,
                                                                         unsigned* pending) {
  FAKE_GPU(dev, "nvmlDeviceGetMigMode");
  if (!g->spec.contains("mig")) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = g->spec["mig"].get<unsigned>();
  return NVML_SUCCESS;
}
#endif

}  // extern "C"
