// SPDX-License-Identifier: Apache-2.0
#include "daemon/gpu_metrics.h"

#include <algorithm>
#include <set>

namespace mlos::daemon {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::Labels;

// A gauge that exists while its figure is known.
template <typename T>
void set_or_remove(prometheus::Family<prometheus::Gauge>& family, prometheus::Gauge*& gauge, const Labels& labels,
                   const std::optional<T>& value, double scale = 1) {
  if (!value) {
    if (gauge != nullptr) family.Remove(gauge);
    gauge = nullptr;
    return;
  }
  if (gauge == nullptr) gauge = &family.Add(labels);
  gauge->Set(static_cast<double>(*value) * scale);
}

}  // namespace

struct GpuMetrics::GpuSeries {
  Labels labels;
  prometheus::Gauge* utilization = nullptr;
  prometheus::Gauge* used = nullptr;
  prometheus::Gauge* free = nullptr;
  prometheus::Gauge* power = nullptr;
  prometheus::Gauge* temperature = nullptr;
};

struct GpuMetrics::JobSeries {
  Labels labels;
  prometheus::Gauge* memory = nullptr;
  prometheus::Gauge* utilization = nullptr;
  prometheus::Counter* loading = nullptr;
  prometheus::Counter* stall = nullptr;
  double loading_last = 0, stall_last = 0;
};

GpuMetrics::GpuMetrics(prometheus::Registry& registry, Source source, JobGpuAccounting::Lineage lineage, Clock clock)
    : source_(std::move(source)),
      lineage_(std::move(lineage)),
      clock_(std::move(clock)),
      utilization_(BuildGauge()
                       .Name("mlos_gpu_utilization_percent")
                       .Help("Percent of NVML's sample period a kernel ran on the GPU (DCGM_FI_DEV_GPU_UTIL)")
                       .Register(registry)),
      memory_used_(BuildGauge()
                       .Name("mlos_gpu_memory_used_bytes")
                       .Help("GPU memory in use (DCGM_FI_DEV_FB_USED, in bytes)")
                       .Register(registry)),
      memory_free_(BuildGauge()
                       .Name("mlos_gpu_memory_free_bytes")
                       .Help("GPU memory free (DCGM_FI_DEV_FB_FREE, in bytes)")
                       .Register(registry)),
      power_(BuildGauge().Name("mlos_gpu_power_watts").Help("GPU power draw (DCGM_FI_DEV_POWER_USAGE)").Register(registry)),
      temperature_(BuildGauge()
                       .Name("mlos_gpu_temperature_celsius")
                       .Help("GPU temperature (DCGM_FI_DEV_GPU_TEMP)")
                       .Register(registry)),
      job_memory_(BuildGauge()
                      .Name("mlos_job_gpu_memory_bytes")
                      .Help("GPU memory used by the job's processes (NVML's per-process figures, every GPU)")
                      .Register(registry)),
      job_utilization_(BuildGauge()
                           .Name("mlos_job_gpu_utilization_percent")
                           .Help("Mean utilization of the GPUs the job holds (the whole GPU's for shared ones)")
                           .Register(registry)),
      job_loading_(BuildCounter()
                       .Name("mlos_job_gpu_data_loading_seconds_total")
                       .Help("Time the job was in DATA_LOADING while its GPUs' utilization was known")
                       .Register(registry)),
      job_stall_(BuildCounter()
                     .Name("mlos_job_gpu_data_stall_seconds_total")
                     .Help("Time the job was in DATA_LOADING with every GPU it holds idle (data stall)")
                     .Register(registry)) {}

GpuMetrics::~GpuMetrics() = default;

void GpuMetrics::update(const std::vector<JobSample>& samples) {
  const gpu::GpuInventory inv = source_();
  const double now = clock_();
  const double elapsed = last_ ? now - *last_ : 0;
  last_ = now;
  accounting_.update(samples, inv, elapsed, lineage_);
  update_node(inv);
  update_jobs(samples);
  std::lock_guard lock(mu_);
  snapshot_ = accounting_.figures();
}

std::map<uint64_t, JobGpuFigures> GpuMetrics::figures() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

void GpuMetrics::update_node(const gpu::GpuInventory& inv) {
  std::set<std::string> present;
  for (const auto& g : inv.gpus) {
    present.insert(g.uuid);
    auto& s = gpus_[g.uuid];
    if (!s) {
      s = std::make_unique<GpuSeries>();
      s->labels = {{"gpu", std::to_string(g.index)},
                   {"UUID", g.uuid},
                   {"pci_bus_id", g.pci_busid},
                   {"device", "nvidia" + std::to_string(g.index)},
                   {"modelName", g.name}};
    }
    set_or_remove(utilization_, s->utilization, s->labels, g.utilization_percent);
    set_or_remove(memory_used_, s->used, s->labels, std::optional<uint64_t>(g.memory_used));
    set_or_remove(memory_free_, s->free, s->labels, std::optional<uint64_t>(g.memory_free));
    set_or_remove(power_, s->power, s->labels, g.power_milliwatts, 1e-3);
    set_or_remove(temperature_, s->temperature, s->labels, g.temperature_celsius);
  }
  for (auto it = gpus_.begin(); it != gpus_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    GpuSeries& s = *it->second;  // fell off the bus, or skipped this time
    if (s.utilization) utilization_.Remove(s.utilization);
    if (s.used) memory_used_.Remove(s.used);
    if (s.free) memory_free_.Remove(s.free);
    if (s.power) power_.Remove(s.power);
    if (s.temperature) temperature_.Remove(s.temperature);
    it = gpus_.erase(it);
  }
}

void GpuMetrics::remove(JobSeries& s) {
  if (s.memory) job_memory_.Remove(s.memory);
  if (s.utilization) job_utilization_.Remove(s.utilization);
  if (s.loading) job_loading_.Remove(s.loading);
  if (s.stall) job_stall_.Remove(s.stall);
}

void GpuMetrics::update_jobs(const std::vector<JobSample>& samples) {
  std::set<uint64_t> present;
  const auto& figures = accounting_.figures();
  for (const auto& j : samples) {
    present.insert(j.job_id);
    const Labels labels{{"job_id", std::to_string(j.job_id)}, {"label", j.label}, {"uid", std::to_string(j.uid)}};
    auto& series = jobs_[j.job_id];
    if (series && series->labels != labels) {  // the id reused by another job
      remove(*series);
      series.reset();
    }
    if (!series) {
      series = std::make_unique<JobSeries>();
      series->labels = labels;
    }
    auto f = figures.find(j.job_id);
    if (f == figures.end()) continue;
    set_or_remove(job_memory_, series->memory, labels, f->second.memory_bytes);
    set_or_remove(job_utilization_, series->utilization, labels, f->second.utilization_percent);
    // Only once its GPUs' utilization was known: never a 0 NVML did not give.
    if (f->second.sampled_seconds > 0) {
      if (series->loading == nullptr) series->loading = &job_loading_.Add(labels);
      if (series->stall == nullptr) series->stall = &job_stall_.Add(labels);
      series->loading->Increment(std::max(0.0, f->second.data_loading_seconds - series->loading_last));
      series->stall->Increment(std::max(0.0, f->second.data_stall_seconds - series->stall_last));
      series->loading_last = f->second.data_loading_seconds;
      series->stall_last = f->second.data_stall_seconds;
    }
  }
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    remove(*it->second);
    it = jobs_.erase(it);
  }
}

}  // namespace mlos::daemon
