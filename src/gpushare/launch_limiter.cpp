// SPDX-License-Identifier: Apache-2.0
#include "gpushare/launch_limiter.h"

#include <algorithm>
#include <cmath>

namespace mlos::gpushare {

LaunchLimiter::LaunchLimiter(double share) : share_(std::clamp(share, 0.01, 1.0)) {}

double LaunchLimiter::rate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rate_;
}

int64_t LaunchLimiter::admit(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  ++launches_;
  if (rate_ <= 0) return 0;
  const double burst = std::max(1.0, rate_ * kBurstSeconds);
  tokens_ = std::min(burst, tokens_ + static_cast<double>(now_ns - refilled_ns_) * 1e-9 * rate_);
  refilled_ns_ = now_ns;
  tokens_ -= 1.0;  // taken now; a negative balance is the queue of waiters
  if (tokens_ >= 0) return 0;
  return static_cast<int64_t>(std::ceil(-tokens_ / rate_ * 1e9));
}

void LaunchLimiter::on_sample(double utilization, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t since = last_sample_ns_;
  const uint64_t launches = launches_;
  last_sample_ns_ = now_ns;
  launches_ = 0;
  if (since == 0 || now_ns <= since) return;
  const double observed = static_cast<double>(launches) / (static_cast<double>(now_ns - since) * 1e-9);
  const double u = std::clamp(utilization, 0.0, 1.0);
  if (share_ >= 1.0) {
    rate_ = 0;
    return;
  }
  if (u > share_ * 1.02) {
    if (observed <= 0) return;  // busy from launches made before the sample: wait for ours
    const double target = observed * share_ / u;
    const double from = rate_ > 0 ? std::min(rate_, observed) : observed;
    rate_ = std::max(kMinRate, from + (target - from) * 0.5);
    if (tokens_ > 0) tokens_ = 0;
    refilled_ns_ = now_ns;
  } else if (rate_ > 0 && u < share_ * 0.98) {
    // Under the share while limited: grow towards the rate that would
    // reach it, at most doubling per sample; unlimited once the limit is
    // far above what the job asks for (it no longer binds).
    const double want = u > 0 ? std::min(2.0, share_ / u) : 2.0;
    rate_ *= 1.0 + (want - 1.0) * 0.5;
    if (observed > 0 && rate_ > 4.0 * observed) rate_ = 0;
  }
}

}  // namespace mlos::gpushare
