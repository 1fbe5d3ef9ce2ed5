/* SPDX-License-Identifier: Apache-2.0 */
// One job's prefetching: what to read ahead of the job, from its announced
// plan first and its learned read model (read_model.h) second, within a
// byte budget, judged by whether the job then reads what was fetched.
//
// - Budget: at most `ahead_bytes` fetched and not yet read, and at most a
//   quarter of the job's memory limit when it has one (the page cache the
//   fetch fills is charged to the job's memory cgroup). Moderate memory
//   pressure divides the budget by 4; critical pressure stops fetching.
// - Judging: a fetched extent is a hit when the job reads from it before
//   `expire_reads` further reads, wasted otherwise. Each source (plan,
//   learned) is judged on its own last `judge_window` outcomes: below
//   `stop_below_hit_rate` it stops for `pause_reads` reads, then tries
//   again.
// - Refreshing: an extent fetched and not yet read may have been evicted
//   meanwhile (memory pressure, another reader's scan). Each time the job
//   has read since the last call, the `refresh_head` nearest pending
//   extents of each source are fetched again (cheap when still resident:
//   no I/O); they count once in the stats.
// Pure logic: no system call; the policy glue (prefetch_policy.cpp) feeds
// it the host's reads, plan and figures and issues what it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "read_model.h"

namespace mlos::prefetch {

struct PrefetchConfig {
  uint64_t ahead_bytes = 64ull << 20;
  uint64_t block_bytes = 1ull << 20;
  bool use_plan = true;
  bool learn = true;
  double min_confidence = 0.5;
  double stop_below_hit_rate = 0.25;
  size_t judge_window = 64;
  uint64_t pause_reads = 4096;
  uint64_t expire_reads = 2048;
  size_t max_states = 200000;
  size_t max_fetches_per_tick = 128;
  size_t refresh_head = 4;
};

enum class Source { kPlan = 0, kLearned = 1 };

// A range to fetch; never open-ended: a file or extent of unknown size is
// one block, so the budget counts what is asked of the kernel.
struct Fetch {
  std::string path;
  uint64_t offset = 0, length = 0;
  Source source = Source::kPlan;
  bool refresh = false;  // fetched again while pending (see "Refreshing")
};

// The announced plan's next entries (mlos_policy_plan_t).
struct PlanView {
  uint64_t generation = 0;
  std::vector<std::pair<std::string, int64_t>> next;  // path, size (-1 unknown)
};

struct PrefetchStats {
  uint64_t reads = 0, fetches = 0, fetched_bytes = 0;
  uint64_t hits[2] = {0, 0}, hit_bytes[2] = {0, 0};
  uint64_t wasted[2] = {0, 0}, wasted_bytes[2] = {0, 0};
  uint64_t pauses[2] = {0, 0};
  uint64_t refreshes = 0;
  uint64_t lost_reads = 0;
  double hit_rate(Source s) const {
    const auto i = static_cast<size_t>(s);
    const uint64_t judged = hits[i] + wasted[i];
    return judged ? static_cast<double>(hits[i]) / static_cast<double>(judged) : 0.0;
  }
};

class Prefetcher {
 public:
  explicit Prefetcher(PrefetchConfig config);

  // One read of the job, in order.
  void observe(const std::string& path, uint64_t offset, uint64_t length);
  // `reads` of the job's reads never reached the policy (the log is
  // bounded): counted, and the model learns no transition across the gap.
  void lost(uint64_t reads);
  // A fetch next() returned that the host refused: no longer pending, not
  // judged, not counted.
  void cancel(const Fetch& f);

  // What to fetch now. `memory_limit` 0: none known; `pressure`:
  // mlos_memory_pressure_level_t, -1 unknown.
  std::vector<Fetch> next(const PlanView& plan, uint64_t memory_limit, int pressure);

  // The byte budget for fetched-and-unread data now.
  uint64_t budget(uint64_t memory_limit, int pressure) const;
  uint64_t outstanding_bytes() const { return outstanding_bytes_; }
  bool paused(Source s) const { return paused_until_[static_cast<size_t>(s)] > stats_.reads; }
  const PrefetchStats& stats() const { return stats_; }
  const ReadModel& model() const { return model_; }
  const PrefetchConfig& config() const { return c_; }

 private:
  struct Pending {
    uint64_t length;     // 0: to the end
    uint64_t bytes;      // what it counts against the budget
    uint64_t issued_at;  // stats_.reads when issued
    Source source;
  };
  using Key = std::pair<std::string, uint64_t>;  // path, offset
  void judge(Source s, bool hit, uint64_t bytes);
  void expire();
  // Adds a fetch of the extent unless it is pending; a pending one is
  // fetched again while `refresh` lasts (counted down).
  void issue(std::vector<Fetch>& out, const std::string& path, uint64_t offset, uint64_t length, uint64_t bytes,
             Source source, size_t& refresh);

  PrefetchConfig c_;
  ReadModel model_;
  PrefetchStats stats_;
  std::map<Key, Pending> pending_;
  uint64_t outstanding_bytes_ = 0;
  std::deque<bool> outcomes_[2];
  uint64_t paused_until_[2] = {0, 0};
  uint64_t reads_at_last_next_ = 0;
};

}  // namespace mlos::prefetch
