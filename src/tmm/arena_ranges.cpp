// SPDX-License-Identifier: Apache-2.0
#include "tmm/arena_ranges.h"

#include <algorithm>
#include <cassert>

namespace mlos::tmm {

ArenaRanges::ArenaRanges(uint64_t size) : free_bytes_(size) {
  if (size > 0) free_.emplace(0, size);
}

std::optional<uint64_t> ArenaRanges::carve(uint64_t bytes, uint64_t alignment) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = it->first, end = it->first + it->second;
    const uint64_t aligned = (start + alignment - 1) & ~(alignment - 1);
    if (aligned < start || aligned > end || end - aligned < bytes) continue;
    free_.erase(it);
    if (aligned > start) free_.emplace(start, aligned - start);
    if (aligned + bytes < end) free_.emplace(aligned + bytes, end - aligned - bytes);
    free_bytes_ -= bytes;
    return aligned;
  }
  return std::nullopt;
}

void ArenaRanges::give_back(uint64_t offset, uint64_t bytes) {
  uint64_t start = offset, length = bytes;
  auto next = free_.lower_bound(offset);
  assert(next == free_.end() || next->first >= offset + bytes);
  if (next != free_.end() && next->first == offset + bytes) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    assert(prev->first + prev->second <= offset);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, length);
  free_bytes_ += bytes;
}

uint64_t ArenaRanges::largest_free() const {
  uint64_t largest = 0;
  for (const auto& [offset, length] : free_) largest = std::max(largest, length);
  return largest;
}

}  // namespace mlos::tmm
