/* SPDX-License-Identifier: Apache-2.0 */
// The GPUs' figures in Prometheus (docs/monitoring.md, "GPUs"), read from
// NVML at each metrics update on the metrics updater's thread, and what they
// show of each job (JobGpuAccounting). Node series are named after
// dcgm-exporter's fields and carry its labels (gpu, UUID, pci_bus_id,
// device, modelName), so dashboards built for it read them:
//
//   mlos_gpu_utilization_percent   DCGM_FI_DEV_GPU_UTIL
//   mlos_gpu_memory_used_bytes     DCGM_FI_DEV_FB_USED (MiB there)
//   mlos_gpu_memory_free_bytes     DCGM_FI_DEV_FB_FREE (MiB there)
//   mlos_gpu_power_watts           DCGM_FI_DEV_POWER_USAGE
//   mlos_gpu_temperature_celsius   DCGM_FI_DEV_GPU_TEMP
//   mlos_job_gpu_memory_bytes{job_id,label,uid}, mlos_job_gpu_utilization_percent,
//   mlos_job_gpu_data_loading_seconds_total, mlos_job_gpu_data_stall_seconds_total
//
// and, for jobs with GPU limits (their share file, src/gpushare):
//   mlos_job_gpu_memory_limit_bytes, mlos_job_gpu_share_percent,
//   mlos_job_gpu_capped_memory_bytes (held through the interposer),
//   mlos_job_gpu_allocations_refused_total, mlos_job_gpu_throttled_seconds_total
//
// A figure NVML does not give has no series (never 0).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "daemon/job_gpu_figures.h"

namespace mlos::daemon {

class GpuMetrics {
 public:
  using Source = std::function<gpu::GpuInventory()>;
  using Clock = std::function<double()>;  // seconds, monotonic
  // A job's share file, read for uid (the default: read_share_file with
  // live processes by /proc, owned by that uid); nullopt with *why.
  using ShareReader =
      std::function<std::optional<gpushare::ShareFileView>(const std::string& path, uint32_t uid, std::string* why)>;
  GpuMetrics(prometheus::Registry& registry, Source source, JobGpuAccounting::Lineage lineage, Clock clock,
             ShareReader share_reader = {});
  ~GpuMetrics();

  // One reading for `samples` (the jobs now). One thread calls it.
  void update(const std::vector<JobSample>& samples);
  // The jobs' figures of the last update; any thread.
  std::map<uint64_t, JobGpuFigures> figures() const;

 private:
  struct GpuSeries;
  struct JobSeries;
  void update_node(const gpu::GpuInventory& inv);
  void update_jobs(const std::vector<JobSample>& samples, const std::map<uint64_t, JobGpuFigures>& figures);
  void remove(JobSeries& series);  // its Prometheus series

  Source source_;
  JobGpuAccounting::Lineage lineage_;
  Clock clock_;
  ShareReader share_reader_;
  std::optional<double> last_;
  JobGpuAccounting accounting_;
  mutable std::mutex mu_;
  std::map<uint64_t, JobGpuFigures> snapshot_;  // guarded by mu_

  prometheus::Family<prometheus::Gauge>& utilization_;
  prometheus::Family<prometheus::Gauge>& memory_used_;
  prometheus::Family<prometheus::Gauge>& memory_free_;
  prometheus::Family<prometheus::Gauge>& power_;
  prometheus::Family<prometheus::Gauge>& temperature_;
  prometheus::Family<prometheus::Gauge>& job_memory_;
  prometheus::Family<prometheus::Gauge>& job_utilization_;
  prometheus::Family<prometheus::Counter>& job_loading_;
  prometheus::Family<prometheus::Counter>& job_stall_;
  prometheus::Family<prometheus::Gauge>& job_memory_limit_;
  prometheus::Family<prometheus::Gauge>& job_share_;
  prometheus::Family<prometheus::Gauge>& job_capped_;
  prometheus::Family<prometheus::Counter>& job_refused_;
  prometheus::Family<prometheus::Counter>& job_throttled_;
  std::map<std::string, std::unique_ptr<GpuSeries>> gpus_;  // by UUID
  std::map<uint64_t, std::unique_ptr<JobSeries>> jobs_;
};

}  // namespace mlos::daemon
