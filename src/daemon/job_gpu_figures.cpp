// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_gpu_figures.h"

#include <algorithm>
#include <set>

namespace mlos::daemon {

void JobGpuAccounting::update(const std::vector<JobSample>& jobs, const gpu::GpuInventory& gpus,
                              double elapsed_seconds, const Lineage& lineage) {
  std::map<uint64_t, JobGpuFigures> next;
  // Which jobs each GPU process belongs to: every job whose owner is the
  // process or one of its ancestors (a nested job and its envelope alike).
  std::map<std::pair<int, uint64_t>, std::vector<uint64_t>> jobs_of_owner;
  for (const auto& j : jobs) jobs_of_owner[{j.owner.pid, j.owner.start_time}].push_back(j.job_id);
  // The jobs a GPU process belongs to, by its lineage (asked once per pid).
  std::map<uint32_t, std::set<uint64_t>> jobs_of_pid;
  auto jobs_of = [&](uint32_t pid) -> const std::set<uint64_t>& {
    auto [it, fresh] = jobs_of_pid.try_emplace(pid);
    if (fresh) {
      for (const ProcessId& up : lineage(static_cast<int>(pid))) {
        auto o = jobs_of_owner.find({up.pid, up.start_time});
        if (o != jobs_of_owner.end()) it->second.insert(o->second.begin(), o->second.end());
      }
    }
    return it->second;
  };
  std::map<uint64_t, uint64_t> memory;
  std::set<uint64_t> with_figure;
  for (const auto& g : gpus.gpus) {
    if (!g.processes) continue;
    for (const auto& p : *g.processes) {
      for (uint64_t job : jobs_of(p.pid)) {
        if (!p.used_bytes) continue;
        memory[job] += *p.used_bytes;
        with_figure.insert(job);
      }
    }
  }
  for (const auto& j : jobs) {
    JobGpuFigures f = figures_.count(j.job_id) ? figures_.at(j.job_id) : JobGpuFigures{};
    f.memory_bytes = with_figure.count(j.job_id) ? std::optional<uint64_t>(memory[j.job_id]) : std::nullopt;
    f.utilization_percent.reset();
    double sum = 0;
    bool idle = true;
    size_t known = 0;
    for (const auto& uuid : j.gpus) {
      auto g = std::find_if(gpus.gpus.begin(), gpus.gpus.end(), [&](const gpu::GpuDevice& d) { return d.uuid == uuid; });
      if (g == gpus.gpus.end()) continue;
      // A shared GPU: the job's own processes' share where NVML gives it
      // per process; an exclusive one (or no per-process figures): the GPU's.
      std::optional<double> u;
      if (!j.gpus_exclusive && g->process_sm_percent) {
        double mine = 0;
        for (const auto& [pid, percent] : *g->process_sm_percent) {
          if (jobs_of(pid).count(j.job_id)) mine += percent;
        }
        u = std::min(100.0, mine);
      } else if (g->utilization_percent) {
        u = *g->utilization_percent;
      }
      if (!u) continue;
      sum += *u;
      idle = idle && *u < kIdlePercent;
      ++known;
    }
    // Only when every GPU it holds has a figure: a stall is "all idle".
    if (known > 0 && known == j.gpus.size()) {
      f.utilization_percent = sum / static_cast<double>(known);
      if (elapsed_seconds > 0) {
        f.sampled_seconds += elapsed_seconds;
        if (j.phase == MLOS_TRAINING_PHASE_DATA_LOADING) {
          f.data_loading_seconds += elapsed_seconds;
          if (idle) f.data_stall_seconds += elapsed_seconds;
        }
      }
    }
    next[j.job_id] = f;
  }
  figures_ = std::move(next);
}

}  // namespace mlos::daemon
