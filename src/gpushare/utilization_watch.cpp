// SPDX-License-Identifier: Apache-2.0
#include "gpushare/utilization_watch.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include "gpushare/real_driver.h"

namespace mlos::gpushare {

struct UtilizationWatch::Functions {
  nvmlReturn_t (*init)(void) = nullptr;
  nvmlReturn_t (*shutdown)(void) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned*,
                                      unsigned long long) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
};

namespace {

// /proc/self/status's NSpid line lists one pid per nested pid namespace.
bool in_child_pid_namespace() {
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return false;
  char line[256];
  bool nested = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "NSpid:", 6) != 0) continue;
    int fields = 0;
    for (char* tok = std::strtok(line + 6, " \t\n"); tok != nullptr; tok = std::strtok(nullptr, " \t\n")) ++fields;
    nested = fields > 1;
  }
  std::fclose(f);
  return nested;
}

}  // namespace

UtilizationWatch::UtilizationWatch() : fn_(new Functions) {
  // Plain getenv: part of the preloaded interposer, which does not link
  // os::env (driver_hooks.cpp says why); MLOS_NVML_LIBRARY is in the table.
  const char* path = std::getenv("MLOS_NVML_LIBRARY");
  lib_ = dlopen(path != nullptr && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    source_ = "none: NVML not loadable";
    return;
  }
  auto sym = [&](const char* name) { return real_dlsym(lib_, name); };
  fn_->init = reinterpret_cast<decltype(fn_->init)>(sym("nvmlInit_v2"));
  fn_->shutdown = reinterpret_cast<decltype(fn_->shutdown)>(sym("nvmlShutdown"));
  fn_->by_uuid = reinterpret_cast<decltype(fn_->by_uuid)>(sym("nvmlDeviceGetHandleByUUID"));
  fn_->process_utilization = reinterpret_cast<decltype(fn_->process_utilization)>(sym("nvmlDeviceGetProcessUtilization"));
  fn_->utilization = reinterpret_cast<decltype(fn_->utilization)>(sym("nvmlDeviceGetUtilizationRates"));
  if (fn_->init == nullptr || fn_->by_uuid == nullptr || (fn_->process_utilization == nullptr && fn_->utilization == nullptr)) {
    source_ = "none: NVML lacks the utilization functions";
    return;
  }
  if (fn_->init() != NVML_SUCCESS) {
    source_ = "none: nvmlInit_v2 failed";
    return;
  }
  ok_ = true;
  source_ = fn_->process_utilization != nullptr ? "nvml-process" : "nvml-device";
  if (in_child_pid_namespace()) {
    // NVML names processes by the host's pids, which this process cannot
    // match with its own: the whole GPU's figure instead.
    fn_->process_utilization = nullptr;
    source_ = "nvml-device (pid namespace)";
  }
}

UtilizationWatch::~UtilizationWatch() {
  if (ok_ && fn_->shutdown != nullptr) fn_->shutdown();
  if (lib_ != nullptr) dlclose(lib_);
  delete fn_;
}

std::optional<double> UtilizationWatch::sample(const std::string& uuid, const std::vector<int>& pids) {
  if (!ok_) return std::nullopt;
  nvmlDevice_t dev{};
  if (fn_->by_uuid(uuid.c_str(), &dev) != NVML_SUCCESS) return std::nullopt;
  auto seen = std::find_if(seen_.begin(), seen_.end(), [&](const Seen& s) { return s.uuid == uuid; });
  if (seen == seen_.end()) seen = seen_.insert(seen_.end(), Seen{uuid, 0});
  if (fn_->process_utilization != nullptr) {
    unsigned count = 0;
    nvmlReturn_t r = fn_->process_utilization(dev, nullptr, &count, seen->last_seen);
    if (r == NVML_ERROR_NOT_FOUND) return 0.0;  // no process ran since: the job was idle
    if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
      std::vector<nvmlProcessUtilizationSample_t> samples(count + 8);
      count = static_cast<unsigned>(samples.size());
      r = fn_->process_utilization(dev, samples.data(), &count, seen->last_seen);
      if (r == NVML_ERROR_NOT_FOUND) return 0.0;
      if (r == NVML_SUCCESS) {
        // Several samples per process: its mean; the job's share is the sum.
        std::map<unsigned, std::pair<double, int>> per_pid;
        for (unsigned i = 0; i < count; ++i) {
          const auto& s = samples[i];
          seen->last_seen = std::max(seen->last_seen, s.timeStamp);
          if (std::find(pids.begin(), pids.end(), static_cast<int>(s.pid)) == pids.end()) continue;
          per_pid[s.pid].first += s.smUtil;
          per_pid[s.pid].second += 1;
        }
        double sum = 0;
        for (const auto& [pid, acc] : per_pid) sum += acc.first / acc.second;
        return std::clamp(sum / 100.0, 0.0, 1.0);
      }
    }
    if (fn_->utilization == nullptr) return std::nullopt;
    source_ = "nvml-device";  // per-process figures failed on this GPU
  }
  nvmlUtilization_t u{};
  if (fn_->utilization(dev, &u) != NVML_SUCCESS) return std::nullopt;
  return std::clamp(u.gpu / 100.0, 0.0, 1.0);
}

}  // namespace mlos::gpushare
