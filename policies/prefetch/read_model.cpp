// SPDX-License-Identifier: Apache-2.0
#include "read_model.h"

#include <algorithm>

namespace mlos::prefetch {

ReadModel::ReadModel(uint64_t block_bytes, size_t max_states)
    : block_bytes_(block_bytes == 0 ? 1 : block_bytes), max_states_(max_states) {}

uint32_t ReadModel::file_id(const std::string& path) {
  auto [it, fresh] = file_ids_.emplace(path, static_cast<uint32_t>(files_.size()));
  if (fresh) files_.push_back(path);
  return it->second;
}

int64_t ReadModel::state_of(uint32_t file, uint64_t block) {
  const uint64_t k = key(file, block);
  if (auto it = by_key_.find(k); it != by_key_.end()) return it->second;
  if (states_.size() >= max_states_) {
    ++dropped_states_;
    return -1;
  }
  states_.push_back(State{file, block});
  by_key_.emplace(k, static_cast<uint32_t>(states_.size() - 1));
  return static_cast<int64_t>(states_.size() - 1);
}

void ReadModel::observe(const std::string& path, uint64_t offset, uint64_t length) {
  if (states_.size() >= max_states_ && !file_ids_.count(path)) {
    ++dropped_states_;
    last_ = -1;
    return;
  }
  const uint32_t file = file_id(path);
  // A read continuing the previous extent (a large file read in pieces)
  // extends it rather than making a new state per piece.
  if (last_ >= 0) {
    State& prev = states_[static_cast<size_t>(last_)];
    const uint64_t start = prev.block * block_bytes_;
    if (prev.file == file && offset >= start && (prev.end == 0 || offset <= prev.end) &&
        offset < start + block_bytes_) {
      if (prev.end != 0) prev.end = length == 0 ? 0 : std::max(prev.end, offset + length);
      return;
    }
  }
  const size_t before = states_.size();
  const int64_t s = state_of(file, offset / block_bytes_);
  if (s < 0) {
    last_ = -1;
    return;
  }
  State& now = states_[static_cast<size_t>(s)];
  if (states_.size() > before) {
    now.end = length == 0 ? 0 : offset + length;
  } else if (length == 0) {
    now.end = 0;
  } else if (now.end != 0) {
    now.end = std::max(now.end, offset + length);
  }
  if (last_ >= 0 && last_ != s) {
    State& prev = states_[static_cast<size_t>(last_)];
    ++prev.transitions;
    auto it = std::find_if(prev.next.begin(), prev.next.end(),
                           [&](const Successor& n) { return n.state == static_cast<uint32_t>(s); });
    if (it != prev.next.end()) {
      ++it->count;
    } else if (prev.next.size() < kMaxSuccessors) {
      prev.next.push_back(Successor{static_cast<uint32_t>(s), 1});
    } else {
      auto rarest = std::min_element(prev.next.begin(), prev.next.end(),
                                     [](const Successor& a, const Successor& b) { return a.count < b.count; });
      *rarest = Successor{static_cast<uint32_t>(s), 1};
    }
  }
  last_ = s;
}

std::vector<ExtentRef> ReadModel::predict(uint64_t bytes, size_t max, double min_confidence) const {
  std::vector<ExtentRef> out;
  std::unordered_set<uint32_t> seen;
  uint64_t covered = 0;
  int64_t at = last_;
  while (at >= 0 && out.size() < max && covered < bytes) {
    const State& s = states_[static_cast<size_t>(at)];
    seen.insert(static_cast<uint32_t>(at));
    auto best = std::max_element(s.next.begin(), s.next.end(),
                                 [](const Successor& a, const Successor& b) { return a.count < b.count; });
    if (best == s.next.end()) break;
    const double confidence = static_cast<double>(best->count) / (static_cast<double>(s.transitions) + 1.0);
    if (confidence < min_confidence || seen.count(best->state)) break;
    const State& n = states_[best->state];
    const uint64_t offset = n.block * block_bytes_;
    const uint64_t length = n.end == 0 ? 0 : n.end - offset;
    out.push_back(ExtentRef{files_[n.file], offset, length, confidence});
    covered += length == 0 ? block_bytes_ : length;
    at = best->state;
  }
  return out;
}

}  // namespace mlos::prefetch
