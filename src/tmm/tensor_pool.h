/* SPDX-License-Identifier: Apache-2.0 */
// A pool of tensor memory: buffers of size classes carved from one arena
// (os::MemoryArena) and kept by class when released, so steady-state
// acquire/release is a lock, a vector pop or push and one hash lookup, with
// no system call (the contract of include/mlos/tmm.h, which this serves).
//
// When a class has nothing cached, a buffer is carved from the arena's free
// ranges; when none is large enough, every cached buffer is given back to
// the ranges (coalescing them) and the carve is tried once more, as
// PyTorch's caching allocators free their cache before failing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "os/kernel.h"
#include "os/memory_arena.h"
#include "tmm/arena_ranges.h"

namespace mlos::tmm {

struct PoolConfig {
  uint64_t capacity = 0;
  uint32_t flags = 0;                        // MLOS_TMM_* bits
  std::optional<os::MemoryPolicy> binding;   // where pages go; none: the kernel's default
  std::string name;
};

struct PoolBuffer {
  char* data = nullptr;
  uint64_t size = 0;
  uint64_t capacity = 0;
  uint64_t offset = 0;
};

struct PoolStats {
  uint32_t huge_pages = 0;  // mlos_tmm_huge_pages_t
  int numa_node = -1;
  uint32_t flags = 0;
  uint64_t capacity_bytes = 0;
  uint64_t acquires = 0, releases = 0, reuse_hits = 0, failed_acquires = 0;
  uint64_t buffers_in_use = 0, bytes_in_use = 0, bytes_cached = 0, high_water_bytes = 0;
  uint64_t resident_bytes = 0, locked_bytes = 0, huge_bytes = 0, remote_node_pages = 0;
};

class TensorPool {
 public:
  // The arena is mapped, bound, locked and registered as `config` asks;
  // refusals as mlos_tmm_pool_create documents them.
  static Result<std::unique_ptr<TensorPool>> create(const PoolConfig& config);
  ~TensorPool();
  TensorPool(const TensorPool&) = delete;
  TensorPool& operator=(const TensorPool&) = delete;

  Result<PoolBuffer> acquire(uint64_t bytes);
  Status release(const void* data);
  Status prewarm(uint64_t bytes, uint64_t count);
  Status pin(const void* data);
  Status unpin(const void* data);
  Result<uint64_t> trim();

  PoolStats stats() const;
  // "effect: reason\n" lines for what was asked and not obtained.
  std::string notes() const;
  uint64_t buffers_in_use() const;
  uint64_t capacity() const { return arena_.size(); }
  int fd() const { return arena_.fd(); }
  char* base() const { return arena_.base(); }

 private:
  struct Block {
    uint64_t offset;
    uint64_t bytes;
    int size_class;
    bool in_use = false;
    bool pinned = false;
  };

  TensorPool(const PoolConfig& config, os::MemoryArena arena);
  // A new block of class `cls` from the free ranges (flushing the cache
  // once if needed); nullptr when the arena is full.
  Block* carve_locked(int cls);
  void flush_cache_locked();
  // The acquired block whose data pointer is `data`, or an
  // INVALID_ARGUMENT naming `op`.
  Result<Block*> acquired_block_locked(const void* data, const char* op);
  Status check_size(uint64_t bytes) const;

  const PoolConfig config_;
  os::MemoryArena arena_;
  bool cuda_registered_ = false;
  std::map<std::string, std::string> notes_;  // effect -> reason, set at creation

  mutable std::mutex mu_;
  ArenaRanges ranges_;
  std::unordered_map<uint64_t, Block> blocks_;  // every carved block, by offset
  std::vector<std::vector<Block*>> cached_;     // released blocks, by class
  uint64_t acquires_ = 0, releases_ = 0, reuse_hits_ = 0, failed_ = 0;
  uint64_t in_use_ = 0, bytes_in_use_ = 0, bytes_cached_ = 0, high_water_ = 0, pinned_bytes_ = 0;
};

}  // namespace mlos::tmm
