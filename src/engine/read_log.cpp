// SPDX-License-Identifier: Apache-2.0
#include "engine/read_log.h"

#include <sys/stat.h>

#include <algorithm>

namespace mlos {

namespace {
constexpr int64_t kUnstated = -2;
}  // namespace

void ReadLog::record(policy::FileRead read) {
  std::lock_guard lock(mu_);
  const uint64_t end = std::min<uint64_t>(plan_.size(), position_ + kPlanLookahead);
  for (uint64_t i = position_; i < end; ++i) {
    if (plan_[i] == read.path) {
      position_ = i + 1;
      break;
    }
  }
  reads_.push_back(std::move(read));
  if (reads_.size() > kCapacity) {
    reads_.pop_front();
    ++first_seq_;
  }
}

void ReadLog::announce(std::vector<std::string> paths) {
  std::vector<int64_t> sizes(paths.size(), kUnstated);
  {
    std::lock_guard lock(mu_);
    plan_.swap(paths);
    sizes_.swap(sizes);
    position_ = 0;
    ++generation_;
  }
  // The old plan (now in `paths`) is freed here, outside the lock.
}

uint64_t ReadLog::recorded() const {
  std::lock_guard lock(mu_);
  return first_seq_ + reads_.size();
}

policy::JobReads ReadLog::take(const std::string& consumer, uint64_t job, policy::ReadBudget budget) {
  policy::JobReads out;
  out.job = job;
  const size_t max_reads = std::min(budget.reads, policy::kMaxReadsPerEvent);
  const size_t path_bytes = std::min(budget.path_bytes, policy::kMaxReadPathBytes) / 2;
  std::vector<std::pair<uint64_t, std::string>> unstated;  // plan index -> path
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    auto [cursor, fresh] = cursors_.emplace(consumer, first_seq_);
    uint64_t next = cursor->second;
    if (next < first_seq_) {
      out.lost = first_seq_ - next;
      next = first_seq_;
    }
    // Paths are counted as JSON will write them. The first always goes, so
    // a long path cannot stall the log however small the share.
    size_t bytes = 0;
    while (out.reads.size() < max_reads && next < first_seq_ + reads_.size()) {
      const policy::FileRead& r = reads_[next - first_seq_];
      const size_t size = policy::json_string_bytes(r.path);
      if (bytes != 0 && bytes + size > path_bytes) break;
      bytes += size;
      out.reads.push_back(r);
      ++next;
    }
    cursor->second = next;
    generation = out.plan.generation = generation_;
    out.plan.position = position_;
    out.plan.total = plan_.size();
    bytes = 0;
    for (uint64_t i = position_; i < plan_.size() && out.plan.paths.size() < policy::kMaxPlanWindow; ++i) {
      const size_t size = policy::json_string_bytes(plan_[i]);
      if (bytes != 0 && bytes + size > path_bytes) break;
      bytes += size;
      out.plan.paths.push_back(plan_[i]);
      out.plan.sizes.push_back(sizes_[i]);
      if (sizes_[i] == kUnstated) unstated.emplace_back(i, plan_[i]);
    }
  }
  // stat() outside the lock: record() is on the job's hot path. A read of
  // a whole file (length 0) gets the file's size, so a policy knows what
  // "the whole file" costs.
  for (policy::FileRead& r : out.reads) {
    struct stat st{};
    if (r.length == 0 && stat(r.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      r.length = static_cast<uint64_t>(st.st_size) > r.offset ? static_cast<uint64_t>(st.st_size) - r.offset : 0;
    }
  }
  if (unstated.empty()) return out;
  std::vector<int64_t> stated;
  for (const auto& [index, path] : unstated) {
    struct stat st{};
    stated.push_back(stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : -1);
    out.plan.sizes[index - out.plan.position] = stated.back();
  }
  std::lock_guard lock(mu_);
  if (generation_ != generation) return out;
  for (size_t k = 0; k < unstated.size(); ++k) sizes_[unstated[k].first] = stated[k];
  return out;
}

}  // namespace mlos
