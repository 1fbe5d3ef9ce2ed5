/* SPDX-License-Identifier: Apache-2.0 */
// Brings JobMetrics to the jobs' samples on a thread of its own, so that
// mlosd's event loop never waits on it: prometheus-cpp 1.0's Family::Remove
// searches its whole family, so dropping the series of an owner that held
// hundreds of jobs, among thousands, takes seconds (measured: a 5.6 s stall
// of every client at 2,000 jobs when it ran in the loop). The loop posts the
// latest samples; a newer post replaces one not yet taken. prometheus-cpp's
// families lock themselves, so the loop's own metric calls stay safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "daemon/gpu_metrics.h"
#include "daemon/job_metrics.h"

namespace mlos::daemon {

class MetricsUpdater {
 public:
  // `after_update` runs on the updater's thread after each update (the
  // node_exporter textfile is written there); may be empty. `gpus` (may
  // be null) reads the GPUs at each update, on this thread too: NVML can
  // take its time (a GPU falling off the bus), the loop never waits on it.
  MetricsUpdater(JobMetrics& metrics, std::function<void()> after_update, GpuMetrics* gpus = nullptr);
  ~MetricsUpdater();  // cuts the update under way short, then joins
  MetricsUpdater(const MetricsUpdater&) = delete;
  MetricsUpdater& operator=(const MetricsUpdater&) = delete;

  void post(std::vector<JobSample> samples);

 private:
  void run();

  JobMetrics& metrics_;
  std::function<void()> after_update_;
  GpuMetrics* gpus_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::optional<std::vector<JobSample>> pending_;  // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  std::atomic<bool> cancel_{false};                // read by JobMetrics::update
  std::thread thread_;
};

}  // namespace mlos::daemon
