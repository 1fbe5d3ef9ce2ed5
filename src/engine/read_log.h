/* SPDX-License-Identifier: Apache-2.0 */
// A job's read log and read plan, for its policies (mlos_policy_host_t's
// read_log and read_plan): the job records what it read
// (mlos_training_record_read) and announces what it will read
// (mlos_training_announce_reads); the policy thread takes each policy's
// share when it sends that policy a tick.
//
// Bounded: the log keeps the last kCapacity reads; a policy that falls
// further behind is told how many it lost. The plan's position is the
// entry after the furthest one read, found by looking for each read in the
// kPlanLookahead entries from the position (a read elsewhere in the plan,
// or of a file not in it, does not move it).
//
// Thread-safe. record() and announce() take one mutex briefly and make no
// system call; take() stats the plan's window outside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "policy/policy_protocol.h"

namespace mlos {

class ReadLog {
 public:
  static constexpr size_t kCapacity = 16384;
  static constexpr size_t kPlanLookahead = 256;

  // `read.path` must be absolute (the API makes it so).
  void record(policy::FileRead read);
  // Replaces the plan; its position starts at 0.
  void announce(std::vector<std::string> paths);

  // For `consumer` (a policy's name): the reads it has not taken yet, how
  // many it lost, and the plan's next entries with their sizes, within
  // `budget` (half its path bytes for reads, half for the plan, counted as
  // JSON writes them; the first of each goes whatever its size). A read of
  // a whole file (length 0) is given the file's size (stat) when it is a
  // regular file.
  policy::JobReads take(const std::string& consumer, uint64_t job, policy::ReadBudget budget = {});

  uint64_t recorded() const;  // reads ever recorded

 private:
  mutable std::mutex mu_;
  std::deque<policy::FileRead> reads_;
  uint64_t first_seq_ = 0;  // the sequence number of reads_.front()
  std::map<std::string, uint64_t> cursors_;  // consumer -> next sequence number
  std::vector<std::string> plan_;
  std::vector<int64_t> sizes_;  // parallel to plan_; kUnstated until take() stats it
  uint64_t generation_ = 0, position_ = 0;
};

}  // namespace mlos
