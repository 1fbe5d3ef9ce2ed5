// SPDX-License-Identifier: Apache-2.0
// Per-job GPU figures (JobGpuAccounting) and the GPU series (GpuMetrics)
// from injected NVML readings, a made-up process tree and a made-up clock:
// processes attributed to the jobs whose owners are their ancestors, the
// held GPUs' utilization, the data stall summed only in DATA_LOADING with
// every held GPU idle, unknown figures absent, series named and labelled as
// docs/monitoring.md says.
#include "daemon/gpu_metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include <prometheus/text_serializer.h>

namespace mlos::daemon {
namespace {

gpu::GpuDevice device(const std::string& uuid, unsigned index, std::optional<unsigned> util,
                      std::vector<gpu::GpuProcess> procs) {
  gpu::GpuDevice d;
  d.uuid = uuid;
  d.index = index;
  d.name = "NVIDIA H200";
  d.pci_busid = "0000:3b:00." + std::to_string(index);
  d.memory_total = 100;
  d.memory_used = 40;
  d.memory_free = 60;
  d.utilization_percent = util;
  d.processes = std::move(procs);
  return d;
}

JobSample job(uint64_t id, int owner, std::vector<std::string> gpus, mlos_training_phase_t phase) {
  JobSample s;
  s.job_id = id;
  s.label = "j" + std::to_string(id);
  s.uid = 1000;
  s.owner = ProcessId{owner, static_cast<uint64_t>(owner) * 10};
  s.gpus = std::move(gpus);
  s.phase = phase;
  return s;
}

// 100 <- 101 <- 102 (a trainer, its launcher's worker, ...); 200 alone;
// each started at 10 x its pid, except 300, a pid reused since its job's
// owner (started at 3000) died.
std::vector<ProcessId> lineage(int pid) {
  static const std::map<int, int> parent{{102, 101}, {101, 100}};
  auto id = [](int p) { return ProcessId{p, p == 300 ? 9999u : static_cast<uint64_t>(p) * 10}; };
  std::vector<ProcessId> out{id(pid)};
  for (auto it = parent.find(pid); it != parent.end(); it = parent.find(it->second)) out.push_back(id(it->second));
  return out;
}

TEST(JobGpuAccountingTest, ProcessesBelongToTheJobsAboveThemAndStallsNeedDataLoadingAndIdleGpus) {
  JobGpuAccounting a;
  gpu::GpuInventory inv;
  inv.gpus = {device("GPU-a", 0, 2, {{102, 300}, {200, 50}, {300, 70}}),
              device("GPU-b", 1, 90, {{101, std::nullopt}})};
  const std::vector<JobSample> jobs{job(1, 100, {"GPU-a"}, MLOS_TRAINING_PHASE_DATA_LOADING),
                                    job(2, 101, {}, MLOS_TRAINING_PHASE_FORWARD),  // nested under job 1's owner
                                    job(3, 300, {"GPU-a", "GPU-b"}, MLOS_TRAINING_PHASE_DATA_LOADING)};
  a.update(jobs, inv, 0, lineage);  // the first reading: nothing elapsed yet
  auto f = a.figures();
  EXPECT_EQ(f[1].memory_bytes, 300u);  // 102 is below 100; 200 is nobody's
  EXPECT_EQ(f[2].memory_bytes, 300u);  // and below 101
  EXPECT_FALSE(f[3].memory_bytes.has_value()) << "pid 300 now is not job 3's owner (another start time)";
  EXPECT_DOUBLE_EQ(*f[1].utilization_percent, 2);
  EXPECT_DOUBLE_EQ(*f[3].utilization_percent, 46);
  EXPECT_FALSE(f[2].utilization_percent.has_value());  // holds no GPU
  EXPECT_EQ(f[1].sampled_seconds, 0);

  a.update(jobs, inv, 2.0, lineage);
  a.update(jobs, inv, 1.5, lineage);
  f = a.figures();
  EXPECT_DOUBLE_EQ(f[1].data_loading_seconds, 3.5);
  EXPECT_DOUBLE_EQ(f[1].data_stall_seconds, 3.5);  // its one GPU at 2 %: idle
  EXPECT_DOUBLE_EQ(f[3].data_loading_seconds, 3.5);
  EXPECT_DOUBLE_EQ(f[3].data_stall_seconds, 0);  // GPU-b busy
  EXPECT_EQ(f[2].sampled_seconds, 0);

  // Out of DATA_LOADING, or a GPU without a figure: sampled or not, no stall.
  std::vector<JobSample> later = jobs;
  later[0].phase = MLOS_TRAINING_PHASE_BACKWARD;
  inv.gpus[1].utilization_percent.reset();
  a.update(later, inv, 1.0, lineage);
  f = a.figures();
  EXPECT_DOUBLE_EQ(f[1].sampled_seconds, 4.5);
  EXPECT_DOUBLE_EQ(f[1].data_stall_seconds, 3.5);
  EXPECT_FALSE(f[3].utilization_percent.has_value());
  EXPECT_DOUBLE_EQ(f[3].sampled_seconds, 3.5);
  // A job that ended is forgotten.
  a.update({later[1]}, inv, 1.0, lineage);
  EXPECT_EQ(a.figures().size(), 1u);
}

TEST(JobGpuAccountingTest, JobsSharingAGpuGetTheirOwnProcessesShare) {
  JobGpuAccounting a;
  gpu::GpuInventory inv;
  inv.gpus = {device("GPU-a", 0, 80, {})};
  inv.gpus[0].process_sm_percent = std::map<uint32_t, double>{{102, 30}, {200, 50}};
  std::vector<JobSample> jobs{job(1, 100, {"GPU-a"}, MLOS_TRAINING_PHASE_DATA_LOADING),
                              job(2, 200, {"GPU-a"}, MLOS_TRAINING_PHASE_DATA_LOADING),
                              job(3, 999, {"GPU-a"}, MLOS_TRAINING_PHASE_DATA_LOADING)};
  a.update(jobs, inv, 0, lineage);
  a.update(jobs, inv, 1.0, lineage);
  auto f = a.figures();
  EXPECT_DOUBLE_EQ(*f[1].utilization_percent, 30);  // pid 102, below its owner 100
  EXPECT_DOUBLE_EQ(*f[2].utilization_percent, 50);
  EXPECT_DOUBLE_EQ(*f[3].utilization_percent, 0);  // none of its processes ran: stalled
  EXPECT_DOUBLE_EQ(f[3].data_stall_seconds, 1.0);
  EXPECT_DOUBLE_EQ(f[1].data_stall_seconds, 0);  // the GPU is busy with its own work
  // An exclusive claim is the GPU's; so is a shared one without
  // per-process figures.
  jobs[0].gpus_exclusive = true;
  a.update(jobs, inv, 1.0, lineage);
  EXPECT_DOUBLE_EQ(*a.figures().at(1).utilization_percent, 80);
  inv.gpus[0].process_sm_percent.reset();
  a.update(jobs, inv, 1.0, lineage);
  EXPECT_DOUBLE_EQ(*a.figures().at(2).utilization_percent, 80);
}

std::string text(prometheus::Registry& r) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, r.Collect());
  return out.str();
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(GpuMetricsTest, SeriesCarryDcgmExportersLabelsAndFollowGpusAndJobs) {
  prometheus::Registry registry;
  gpu::GpuInventory inv;
  inv.gpus = {device("GPU-a", 0, 2, {{100, 1 << 20}})};
  inv.gpus[0].power_milliwatts = 412000;
  inv.gpus[0].temperature_celsius = 55;
  double now = 10;
  GpuMetrics m(registry, [&] { return inv; }, lineage, [&] { return now; });
  const std::vector<JobSample> jobs{job(1, 100, {"GPU-a"}, MLOS_TRAINING_PHASE_DATA_LOADING)};
  m.update(jobs);
  EXPECT_EQ(text(registry).find("mlos_job_gpu_data_stall_seconds_total{"), std::string::npos)
      << "no stall series before any time was sampled";
  now = 12.5;
  m.update(jobs);
  const std::string t = text(registry);
  const std::string gpu = R"({UUID="GPU-a",device="nvidia0",gpu="0",modelName="NVIDIA H200",pci_bus_id="0000:3b:00.0"})";
  EXPECT_TRUE(has_line(t, "mlos_gpu_utilization_percent" + gpu + " 2")) << t;
  EXPECT_TRUE(has_line(t, "mlos_gpu_memory_used_bytes" + gpu + " 40")) << t;
  EXPECT_TRUE(has_line(t, "mlos_gpu_memory_free_bytes" + gpu + " 60")) << t;
  EXPECT_TRUE(has_line(t, "mlos_gpu_power_watts" + gpu + " 412")) << t;
  EXPECT_TRUE(has_line(t, "mlos_gpu_temperature_celsius" + gpu + " 55")) << t;
  const std::string j = R"({job_id="1",label="j1",uid="1000"})";
  EXPECT_TRUE(has_line(t, "mlos_job_gpu_memory_bytes" + j + " 1048576")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_gpu_utilization_percent" + j + " 2")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_gpu_data_stall_seconds_total" + j + " 2.5")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_gpu_data_loading_seconds_total" + j + " 2.5")) << t;
  EXPECT_DOUBLE_EQ(m.figures().at(1).data_stall_seconds, 2.5);

  // Power unknown now, then the GPU gone and the job ended: no series left.
  inv.gpus[0].power_milliwatts.reset();
  m.update(jobs);
  EXPECT_EQ(text(registry).find("mlos_gpu_power_watts{"), std::string::npos);
  inv.gpus.clear();
  m.update({});
  const std::string empty = text(registry);
  EXPECT_EQ(empty.find("GPU-a"), std::string::npos) << empty;
  EXPECT_EQ(empty.find("job_id=\"1\""), std::string::npos) << empty;
  EXPECT_TRUE(m.figures().empty());
}

}  // namespace
}  // namespace mlos::daemon
