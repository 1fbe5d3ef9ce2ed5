/* SPDX-License-Identifier: Apache-2.0 */
// The free space of an arena as address-ordered ranges of offsets, with
// first-fit carving at an alignment and coalescing on return. It is the
// slow path of a tensor pool: buffers are carved once and then reused by
// class, so it runs only when a class has nothing cached.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace mlos::tmm {

class ArenaRanges {
 public:
  explicit ArenaRanges(uint64_t size);

  // The offset of `bytes` carved at a multiple of `alignment` (a power of
  // two), or nullopt when no free range holds them. The slack before an
  // aligned start stays free.
  std::optional<uint64_t> carve(uint64_t bytes, uint64_t alignment);
  // Gives back [offset, offset + bytes), which must have been carved;
  // merged with free neighbours.
  void give_back(uint64_t offset, uint64_t bytes);

  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_free() const;
  size_t range_count() const { return free_.size(); }

 private:
  std::map<uint64_t, uint64_t> free_;  // offset -> length
  uint64_t free_bytes_;
};

}  // namespace mlos::tmm
