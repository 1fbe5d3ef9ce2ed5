// SPDX-License-Identifier: Apache-2.0
#include "daemon/gpu_metrics.h"

#include <algorithm>
#include <set>

#include "gpushare/job_share.h"

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
  prometheus::Gauge* memory_limit = nullptr;
  prometheus::Gauge* share = nullptr;
  prometheus::Gauge* capped = nullptr;
  prometheus::Counter* refused = nullptr;
  prometheus::Counter* throttled = nullptr;
  double refused_last = 0, throttled_last = 0;
};

GpuMetrics::GpuMetrics(prometheus::Registry& registry, Source source, JobGpuAccounting::Lineage lineage, Clock clock,
                       ShareReader share_reader)
    : source_(std::move(source)),
      lineage_(std::move(lineage)),
      clock_(std::move(clock)),
      share_reader_(share_reader ? std::move(share_reader)
                                 : [](const std::string& path, uint32_t uid, std::string* why) {
                                     return gpushare::read_share_file(path, why, gpushare::process_alive,
                                                                      static_cast<int>(uid));
                                   }),
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
                           .Help("Mean utilization of the GPUs the job holds (its processes' share on shared ones)")
                           .Register(registry)),
      job_loading_(BuildCounter()
                       .Name("mlos_job_gpu_data_loading_seconds_total")
                       .Help("Time the job was in DATA_LOADING while its GPUs' utilization was known")
                       .Register(registry)),
      job_stall_(BuildCounter()
                     .Name("mlos_job_gpu_data_stall_seconds_total")
                     .Help("Time the job was in DATA_LOADING with every GPU it holds idle (data stall)")
                     .Register(registry)),
      job_memory_limit_(BuildGauge()
                            .Name("mlos_job_gpu_memory_limit_bytes")
                            .Help("The job's device memory cap per GPU (mlos run --gpu-memory)")
                            .Register(registry)),
      job_share_(BuildGauge()
                     .Name("mlos_job_gpu_share_percent")
                     .Help("The job's compute share per GPU (mlos run --gpu-share)")
                     .Register(registry)),
      job_capped_(BuildGauge()
                      .Name("mlos_job_gpu_capped_memory_bytes")
                      .Help("Device memory the job's processes hold through the interposer, every GPU")
                      .Register(registry)),
      job_refused_(BuildCounter()
                       .Name("mlos_job_gpu_allocations_refused_total")
                       .Help("Device allocations the job's memory cap refused")
                       .Register(registry)),
      job_throttled_(BuildCounter()
                         .Name("mlos_job_gpu_throttled_seconds_total")
                         .Help("Time the job's kernel launches waited for its compute share")
                         .Register(registry)) {}

GpuMetrics::~GpuMetrics() = default;

void GpuMetrics::update(const std::vector<JobSample>& samples) {
  const gpu::GpuInventory inv = source_();
  const double now = clock_();
  const double elapsed = last_ ? now - *last_ : 0;
  last_ = now;
  accounting_.update(samples, inv, elapsed, lineage_);
  std::map<uint64_t, JobGpuFigures> figures = accounting_.figures();
  for (const auto& j : samples) {
    if (j.gpu_share_file.empty()) continue;
    JobGpuFigures& f = figures[j.job_id];
    // Through the owner's root: the file is where the job sees it, which
    // mlosd's own view may hide (systemd's PrivateTmp, ProtectHome).
    const std::string path =
        j.owner.pid > 0 ? "/proc/" + std::to_string(j.owner.pid) + "/root" + j.gpu_share_file : j.gpu_share_file;
    f.share = share_reader_(path, j.uid, &f.share_note);
  }
  update_node(inv);
  update_jobs(samples, figures);
  std::lock_guard lock(mu_);
  snapshot_ = std::move(figures);
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
  if (s.memory_limit) job_memory_limit_.Remove(s.memory_limit);
  if (s.share) job_share_.Remove(s.share);
  if (s.capped) job_capped_.Remove(s.capped);
  if (s.refused) job_refused_.Remove(s.refused);
  if (s.throttled) job_throttled_.Remove(s.throttled);
}

namespace {

// A counter that follows a total read elsewhere: it grows by what the total
// grew (a total that fell, a restarted job's books, adds nothing).
void follow_total(prometheus::Family<prometheus::Counter>& family, prometheus::Counter*& counter,
                  const Labels& labels, double total, double& last) {
  if (counter == nullptr) counter = &family.Add(labels);
  counter->Increment(std::max(0.0, total - last));
  last = total;
}

}  // namespace

void GpuMetrics::update_jobs(const std::vector<JobSample>& samples, const std::map<uint64_t, JobGpuFigures>& figures) {
  std::set<uint64_t> present;
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
      follow_total(job_loading_, series->loading, labels, f->second.data_loading_seconds, series->loading_last);
      follow_total(job_stall_, series->stall, labels, f->second.data_stall_seconds, series->stall_last);
    }
    const auto& share = f->second.share;
    auto limit = share && share->limits.memory_limit ? std::optional<uint64_t>(share->limits.memory_limit) : std::nullopt;
    auto percent = share && share->limits.share_percent ? std::optional<int>(share->limits.share_percent) : std::nullopt;
    std::optional<uint64_t> capped;
    if (share) {
      capped = 0;
      for (const auto& d : share->devices) *capped += d.used;
      follow_total(job_refused_, series->refused, labels, static_cast<double>(share->refused), series->refused_last);
      follow_total(job_throttled_, series->throttled, labels, static_cast<double>(share->throttled_ns) * 1e-9,
                   series->throttled_last);
    }
    set_or_remove(job_memory_limit_, series->memory_limit, labels, limit);
    set_or_remove(job_share_, series->share, labels, percent);
    set_or_remove(job_capped_, series->capped, labels, capped);
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
