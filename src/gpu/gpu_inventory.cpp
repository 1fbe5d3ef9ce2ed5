// SPDX-License-Identifier: Apache-2.0
#include "gpu/gpu_inventory.h"

#include <cstdio>

#include "gpu/nvml_functions.h"
#include "gpu/nvml_library.h"
#include "os/durable_file.h"

namespace mlos::gpu {

namespace {

// The first line of a sysfs attribute; nullopt if it cannot be read.
std::optional<std::string> sysfs_line(const std::string& path) {
  auto text = os::read_whole_file(path);
  if (!text || !*text) return std::nullopt;
  return (*text)->substr(0, (*text)->find('\n'));
}

std::string kernel_busid(const nvmlPciInfo_t& pci) {
  char text[32];
  snprintf(text, sizeof text, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
  return text;
}

// CPUs from NVML's mask: 64 per unsigned long, CPU 0 the lowest bit of the
// first word.
CpuSet cpus_of_mask(const unsigned long* words, size_t count) {
  CpuSet out;
  for (size_t w = 0; w < count; ++w) {
    for (int b = 0; b < 64; ++b) {
      if ((words[w] >> b) & 1UL) out.set(static_cast<int>(w * 64 + static_cast<size_t>(b)));
    }
  }
  return out;
}

// Where the GPU is attached: sysfs's numa_node and local_cpulist, NVML's
// CPU affinity; disagreements become notes (NVML is kept for the CPUs: it
// is what nvidia-smi topo shows and what NVIDIA's tools bind to).
void read_locality(const NvmlLibrary& nvml, nvmlDevice_t dev, const std::string& sysfs, GpuDevice& g) {
  const NvmlFunctions& f = nvml.fn();
  const std::string dir = sysfs + "/" + g.pci_busid;
  if (auto node = sysfs_line(dir + "/numa_node")) {
    try {
      g.numa_node = std::stoi(*node);  // -1: the kernel does not know
    } catch (const std::exception&) {
      g.notes.push_back("numa_node: sysfs has \"" + *node + "\"");
    }
  } else {
    g.notes.push_back("numa_node: " + dir + "/numa_node cannot be read");
  }
  std::optional<CpuSet> sysfs_cpus;
  if (auto list = sysfs_line(dir + "/local_cpulist")) {
    if (auto parsed = CpuSet::parse_list(*list)) sysfs_cpus = *parsed;
  }
  if (f.cpu_affinity != nullptr) {
    unsigned long words[64] = {};  // 4096 CPUs
    if (const nvmlReturn_t r = f.cpu_affinity(dev, 64, words); r == NVML_SUCCESS) {
      g.cpu_affinity = cpus_of_mask(words, 64);
    } else {
      g.notes.push_back("cpu_affinity: " + nvml.describe("nvmlDeviceGetCpuAffinity", r));
    }
  } else {
    g.notes.push_back("cpu_affinity: this NVML lacks nvmlDeviceGetCpuAffinity");
  }
  if (g.cpu_affinity.empty() && sysfs_cpus) {
    g.cpu_affinity = *sysfs_cpus;
  } else if (sysfs_cpus && !sysfs_cpus->empty() && !(*sysfs_cpus == g.cpu_affinity)) {
    g.notes.push_back("locality: NVML's CPU affinity " + g.cpu_affinity.to_list() + " differs from sysfs local_cpulist " +
                      sysfs_cpus->to_list());
  }
  if (f.numa_node != nullptr) {
    unsigned node = 0;
    if (f.numa_node(dev, &node) == NVML_SUCCESS) g.memory_numa_node = static_cast<int>(node);
  }
  if (f.minor_number != nullptr) {
    unsigned minor = 0;
    if (const nvmlReturn_t r = f.minor_number(dev, &minor); r == NVML_SUCCESS) {
      g.minor_number = minor;
    } else {
      g.notes.push_back("minor_number: " + nvml.describe("nvmlDeviceGetMinorNumber", r));
    }
  } else {
    g.notes.push_back("minor_number: this NVML lacks nvmlDeviceGetMinorNumber");
  }
}

// Figures that change; each unknown one is noted with NVML's reason.
void read_figures(const NvmlLibrary& nvml, nvmlDevice_t dev, GpuDevice& g) {
  const NvmlFunctions& f = nvml.fn();
  auto note = [&](const char* figure, const char* call, nvmlReturn_t r) {
    g.notes.push_back(std::string(figure) + ": " + nvml.describe(call, r));
  };
  auto lacks = [&](const char* figure, const char* call) {
    g.notes.push_back(std::string(figure) + ": this NVML lacks " + call);
  };
  if (f.mig_mode == nullptr) {
    lacks("mig", "nvmlDeviceGetMigMode");
  } else {
    unsigned current = 0, pending = 0;
    // NOT_SUPPORTED: a GPU without MIG, which is "disabled", not unknown.
    const nvmlReturn_t r = f.mig_mode(dev, &current, &pending);
    if (r == NVML_SUCCESS) g.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    else if (r == NVML_ERROR_NOT_SUPPORTED) g.mig_enabled = false;
    else note("mig", "nvmlDeviceGetMigMode", r);
  }
  if (f.utilization == nullptr) {
    lacks("utilization", "nvmlDeviceGetUtilizationRates");
  } else {
    nvmlUtilization_t u{};
    if (const nvmlReturn_t r = f.utilization(dev, &u); r == NVML_SUCCESS) {
      g.utilization_percent = u.gpu;
      g.memory_utilization_percent = u.memory;
    } else {
      note("utilization", "nvmlDeviceGetUtilizationRates", r);
    }
  }
  if (f.power_usage == nullptr) {
    lacks("power", "nvmlDeviceGetPowerUsage");
  } else {
    unsigned mw = 0;
    if (const nvmlReturn_t r = f.power_usage(dev, &mw); r == NVML_SUCCESS) g.power_milliwatts = mw;
    else note("power", "nvmlDeviceGetPowerUsage", r);
  }
  if (f.temperature == nullptr) {
    lacks("temperature", "nvmlDeviceGetTemperature");
  } else {
    unsigned c = 0;
    if (const nvmlReturn_t r = f.temperature(dev, NVML_TEMPERATURE_GPU, &c); r == NVML_SUCCESS) g.temperature_celsius = c;
    else note("temperature", "nvmlDeviceGetTemperature", r);
  }
  if (f.clock_event_reasons == nullptr) {
    lacks("clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons");
  } else {
    unsigned long long bits = 0;
    if (const nvmlReturn_t r = f.clock_event_reasons(dev, &bits); r == NVML_SUCCESS) g.clock_event_reasons = bits;
    else note("clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons", r);
  }
  if (f.compute_processes == nullptr) {
    lacks("processes", "nvmlDeviceGetComputeRunningProcesses_v3");
    return;
  }
  // Ask for the count, then for the list; a process may start in between
  // (INSUFFICIENT_SIZE again), so a few tries with room to spare.
  std::vector<nvmlProcessInfo_t> infos;
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    const nvmlReturn_t r = f.compute_processes(dev, &count, infos.empty() ? nullptr : infos.data());
    if (r == NVML_SUCCESS) {
      std::vector<GpuProcess> out;
      for (unsigned i = 0; i < count && i < infos.size(); ++i) {
        GpuProcess p;
        p.pid = infos[i].pid;
        if (infos[i].usedGpuMemory != static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)) {
          p.used_bytes = infos[i].usedGpuMemory;
        }
        out.push_back(p);
      }
      g.processes = std::move(out);
      return;
    }
    if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
      note("processes", "nvmlDeviceGetComputeRunningProcesses", r);
      return;
    }
    infos.assign(count + 8, nvmlProcessInfo_t{});
  }
  g.notes.push_back("processes: the list kept growing while it was read");
}

// Each process's SM utilization, averaged over the samples NVML buffers
// (lastSeenTimeStamp 0: all of them, the last seconds).
void read_process_utilization(const NvmlLibrary& nvml, nvmlDevice_t dev, GpuDevice& g) {
  const NvmlFunctions& f = nvml.fn();
  if (f.process_utilization == nullptr) {
    g.notes.push_back("process_utilization: this NVML lacks nvmlDeviceGetProcessUtilization");
    return;
  }
  std::vector<nvmlProcessUtilizationSample_t> samples;
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(samples.size());
    const nvmlReturn_t r = f.process_utilization(dev, samples.empty() ? nullptr : samples.data(), &count, 0);
    if (r == NVML_ERROR_NOT_FOUND) {  // no samples: nothing ran lately
      g.process_sm_percent.emplace();
      return;
    }
    if (r == NVML_SUCCESS) {
      std::map<uint32_t, std::pair<double, int>> acc;
      for (unsigned i = 0; i < count && i < samples.size(); ++i) {
        acc[samples[i].pid].first += samples[i].smUtil;
        acc[samples[i].pid].second += 1;
      }
      auto& out = g.process_sm_percent.emplace();
      for (const auto& [pid, a] : acc) out[pid] = a.first / a.second;
      return;
    }
    if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
      g.notes.push_back("process_utilization: " + nvml.describe("nvmlDeviceGetProcessUtilization", r));
      return;
    }
    samples.assign(count + 16, nvmlProcessUtilizationSample_t{});
  }
  g.notes.push_back("process_utilization: the samples kept growing while they were read");
}

}  // namespace

GpuInventory read_gpu_inventory(const NvmlLibrary& nvml, const std::string& sysfs_pci_devices, bool locality) {
  const NvmlFunctions& f = nvml.fn();
  GpuInventory inv;
  inv.driver_version = nvml.driver_version();
  inv.nvml_library = nvml.path();
  unsigned count = 0;
  if (const nvmlReturn_t r = f.device_count(&count); r != NVML_SUCCESS) {
    inv.absent_reason = nvml.describe("nvmlDeviceGetCount_v2", r);
    return inv;
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    GpuDevice g;
    g.index = i;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    nvmlMemory_t mem{};
    nvmlPciInfo_t pci{};
    // The identity every use of a GPU needs; without it the GPU is skipped.
    std::string failed;
    if (nvmlReturn_t r = f.handle_by_index(i, &dev); r != NVML_SUCCESS) {
      failed = nvml.describe("nvmlDeviceGetHandleByIndex_v2", r);
    } else if ((r = f.uuid(dev, uuid, sizeof uuid)) != NVML_SUCCESS) {
      failed = nvml.describe("nvmlDeviceGetUUID", r);
    } else if ((r = f.name(dev, name, sizeof name)) != NVML_SUCCESS) {
      failed = nvml.describe("nvmlDeviceGetName", r);
    } else if ((r = f.memory(dev, &mem)) != NVML_SUCCESS) {
      failed = nvml.describe("nvmlDeviceGetMemoryInfo", r);
    } else if ((r = f.pci_info(dev, &pci)) != NVML_SUCCESS) {
      failed = nvml.describe("nvmlDeviceGetPciInfo_v3", r);
    }
    if (!failed.empty()) {
      inv.skipped.push_back("GPU " + std::to_string(i) + ": " + failed);
      continue;
    }
    g.uuid = uuid;
    g.name = name;
    g.memory_total = mem.total;
    g.memory_used = mem.used;
    g.memory_free = mem.free;
    g.pci_busid = kernel_busid(pci);
    if (locality) read_locality(nvml, dev, sysfs_pci_devices, g);
    read_figures(nvml, dev, g);
    read_process_utilization(nvml, dev, g);
    inv.gpus.push_back(std::move(g));
  }
  if (inv.gpus.empty()) {
    inv.absent_reason = count == 0 ? "NVML (driver " + (inv.driver_version.empty() ? std::string("unknown") : inv.driver_version) +
                                         ") lists no GPUs"
                                   : "NVML lists " + std::to_string(count) + " GPUs but none could be read";
  }
  return inv;
}

GpuInventory discover_gpus(const std::string& sysfs_pci_devices) {
  auto nvml = NvmlLibrary::open();
  if (!nvml) {
    GpuInventory inv;
    inv.absent_reason = nvml.error().message;
    return inv;
  }
  return read_gpu_inventory(**nvml, sysfs_pci_devices);
}

}  // namespace mlos::gpu
