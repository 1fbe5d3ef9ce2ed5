/* SPDX-License-Identifier: Apache-2.0 */
// The job's share of a GPU, from NVML: the summed SM utilization of the
// job's processes (nvmlDeviceGetProcessUtilization), else the whole GPU's
// utilization (nvmlDeviceGetUtilizationRates: every process on it counts,
// so a job sharing the GPU is throttled harder than its share), which is
// also what a process in a child pid namespace (a container) uses: NVML's
// pids are the host's. NVML is
// loaded with dlopen ($MLOS_NVML_LIBRARY, else libnvidia-ml.so.1), on the
// watcher thread, never on a launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlos::gpushare {

class UtilizationWatch {
 public:
  // Loads and initialises NVML; source() says why not when it cannot.
  UtilizationWatch();
  ~UtilizationWatch();
  UtilizationWatch(const UtilizationWatch&) = delete;
  UtilizationWatch& operator=(const UtilizationWatch&) = delete;

  bool ok() const { return ok_; }
  // "nvml-process", "nvml-device", "nvml-device (pid namespace)", or
  // "none: <why>".
  const std::string& source() const { return source_; }
  // The busy fraction (0..1) of the GPU `uuid` due to `pids` since the
  // previous call for that GPU; nullopt when NVML has no new sample.
  std::optional<double> sample(const std::string& uuid, const std::vector<int>& pids);

 private:
  struct Functions;
  void* lib_ = nullptr;
  Functions* fn_ = nullptr;
  bool ok_ = false;
  std::string source_;
  struct Seen {
    std::string uuid;
    unsigned long long last_seen = 0;
  };
  std::vector<Seen> seen_;
};

}  // namespace mlos::gpushare
