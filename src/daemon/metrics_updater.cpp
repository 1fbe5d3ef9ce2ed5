// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics_updater.h"

namespace mlos::daemon {

MetricsUpdater::MetricsUpdater(JobMetrics& metrics, std::function<void()> after_update, GpuMetrics* gpus)
    : metrics_(metrics), after_update_(std::move(after_update)), gpus_(gpus) {
  thread_ = std::thread([this] { run(); });
}

MetricsUpdater::~MetricsUpdater() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cancel_ = true;
  wake_.notify_one();
  thread_.join();
}

void MetricsUpdater::post(std::vector<JobSample> samples) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(samples);
  }
  wake_.notify_one();
}

void MetricsUpdater::run() {
  for (;;) {
    std::vector<JobSample> samples;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
      if (stopping_) return;
      samples = std::move(*pending_);
      pending_.reset();
    }
    metrics_.update(samples, &cancel_);
    if (gpus_ != nullptr && !cancel_) gpus_->update(samples);
    if (after_update_) after_update_();
  }
}

}  // namespace mlos::daemon
