/* SPDX-License-Identifier: Apache-2.0 */
// The compute share as a launch-rate limit: a token bucket that kernel
// launches draw from, and a controller that sets the bucket's rate from
// utilization samples, so that the job's share of the GPU settles at its
// target. Pure (the clock is a parameter); the interposer feeds it NVML's
// samples from a watcher thread (utilization_watch.h).
//
// Model: a GPU's busy share grows with the launch rate of the work it runs.
// With the job at utilization u under an observed launch rate r, the rate
// that gives the target s is about r * s / u; the controller moves the
// limit halfway there per sample (damping the sample noise), lets it grow
// when the job runs under its share while limited, and lifts the limit
// once it no longer binds. Launches are never refused, only delayed.
#pragma once

#include <cstdint>
#include <mutex>

namespace mlos::gpushare {

class LaunchLimiter {
 public:
  // share: the target fraction of the GPU, (0, 1].
  explicit LaunchLimiter(double share);

  // Takes a token for one launch at `now_ns`; returns how long the caller
  // must wait before launching (0 when unlimited or a token was there).
  int64_t admit(int64_t now_ns);
  // One utilization sample: the job's busy fraction of the GPU (0..1) over
  // the time since the previous sample, taken at `now_ns`.
  void on_sample(double utilization, int64_t now_ns);

  double share() const { return share_; }
  // Launches per second allowed; 0 = unlimited.
  double rate() const;

  // Below this the limit is not lowered: a job is slowed, never stopped.
  static constexpr double kMinRate = 5.0;
  // How much a bucket may hold: bursts up to this long at the rate.
  static constexpr double kBurstSeconds = 0.02;

 private:
  const double share_;
  mutable std::mutex mu_;
  double rate_ = 0;      // launches/s; 0 = unlimited
  double tokens_ = 0;
  int64_t refilled_ns_ = 0;
  uint64_t launches_ = 0;       // since the last sample
  int64_t last_sample_ns_ = 0;  // 0 = none yet
};

}  // namespace mlos::gpushare
