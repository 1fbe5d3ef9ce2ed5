/* SPDX-License-Identifier: Apache-2.0 */
// How many intra-op threads a job should run now, given what else runs on
// its CPUs. Pure logic, fed with samples; used by the thread-governor
// policy (policies/thread-governor), which every job gets by default.
//
// Why: an intra-op pool (OpenMP) splits every operator into one chunk per
// thread and waits for the slowest. If another process takes one of the
// pool's CPUs, the thread sharing it finishes late on every operator, and
// the whole job runs at the speed of its slowest thread: a 2-thread CNN on
// 2 CPUs dropped from about 3000 to 240 samples/s (12x) next to one
// CPU-bound process here, while 1 thread ran at about 1650. The fix is to
// use fewer threads than CPUs while CPUs are taken, and all of them again
// when they are free.
//
// How: over each window (`interval`, 0.5 s), the busy time of the job's
// CPUs (every process, /proc/stat) minus the job's own process's CPU time
// is the load of everything else there: other processes, and the job's own
// DataLoader workers, which compete with the pool the same way. A CPU
// counts as taken when that load covers at least 40 % of one
// (taken = floor(other + 0.6)). The pool gets the CPUs left, between 1 and
// max_threads, and a new size is adopted only when two consecutive windows
// agree (a burst shorter than a window changes nothing).
#pragma once

#include <optional>

namespace mlos {

class ThreadGovernor {
 public:
  static constexpr double kTakenShare = 0.4;

  ThreadGovernor(int cpus, int max_threads, double interval_seconds = 0.5);

  // One sample: monotonic seconds, busy seconds of the job's CPUs, CPU
  // seconds of the job's process. Returns the thread count to use from
  // now on when it changes, else nullopt. Samples closer than the interval
  // to the last one used are ignored; negative (unknown) figures too.
  std::optional<int> observe(double now, double cpus_busy, double own);

  int threads() const { return threads_; }
  double other_load() const { return other_load_; }  // CPUs' worth, last window

 private:
  int cpus_, max_threads_;
  double interval_;
  int threads_;
  double other_load_ = 0;
  bool have_last_ = false;
  double last_now_ = 0, last_busy_ = 0, last_own_ = 0;
  std::optional<int> proposal_;
};

}  // namespace mlos
