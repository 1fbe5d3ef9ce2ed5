// SPDX-License-Identifier: Apache-2.0
#include "tmm/tensor_pool.h"

#include <linux/mempolicy.h>

#include <algorithm>

#include "mlos/tmm.h"
#include "os/cuda_host_memory.h"
#include "tmm/size_classes.h"

namespace mlos::tmm {

namespace {

std::string describe_bytes(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

Result<std::unique_ptr<TensorPool>> TensorPool::create(const PoolConfig& config) {
  os::ArenaOptions options;
  options.size = config.capacity;
  options.shareable = !(config.flags & MLOS_TMM_PRIVATE);
  options.hugetlb = config.flags & MLOS_TMM_HUGETLB;
  options.transparent_huge = config.flags & MLOS_TMM_HUGE_PAGES;
  options.name = config.name;
  if (options.hugetlb && !options.shareable) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "MLOS_TMM_HUGETLB needs a memfd arena: drop MLOS_TMM_PRIVATE");
  }
  auto arena = os::MemoryArena::create(options);
  if (!arena) return arena.error();
  // Bind before any page exists, so every page lands on the node whoever
  // touches it first (for a memfd this is the file's shared policy).
  if (config.binding) {
    if (Status s = arena->bind(*config.binding); !s) return s.error();
  }
  std::unique_ptr<TensorPool> pool(new TensorPool(config, std::move(*arena)));
  if (config.flags & MLOS_TMM_LOCKED) {
    if (Status s = pool->arena_.lock(0, pool->arena_.size()); !s) return s.error();
  }
  if (config.flags & MLOS_TMM_CUDA_PINNED) {
    if (Status s = os::cuda_register_host(pool->arena_.base(), pool->arena_.size()); !s) return s.error();
    pool->cuda_registered_ = true;
  }
  return pool;
}

TensorPool::TensorPool(const PoolConfig& config, os::MemoryArena arena)
    : config_(config), arena_(std::move(arena)), ranges_(arena_.size()), cached_(class_count()) {
  if (!arena_.huge_page_note().empty()) notes_["huge_pages"] = arena_.huge_page_note();
}

TensorPool::~TensorPool() {
  if (cuda_registered_) os::cuda_unregister_host(arena_.base());
}

Status TensorPool::check_size(uint64_t bytes) const {
  if (bytes == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "buffer size 0");
  if (bytes > arena_.size() || class_bytes(size_class(bytes)) > arena_.size()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "buffer of " + describe_bytes(bytes) + " cannot fit a pool of " +
                                                     describe_bytes(arena_.size()) + " (its size class is " +
                                                     describe_bytes(class_bytes(size_class(bytes))) + ")");
  }
  return Status::Ok();
}

TensorPool::Block* TensorPool::carve_locked(int cls) {
  const uint64_t bytes = class_bytes(cls);
  auto offset = ranges_.carve(bytes, class_alignment(cls));
  if (!offset && bytes_cached_ > 0) {
    flush_cache_locked();
    offset = ranges_.carve(bytes, class_alignment(cls));
  }
  if (!offset) return nullptr;
  auto [it, inserted] = blocks_.emplace(*offset, Block{*offset, bytes, cls});
  return &it->second;
}

void TensorPool::flush_cache_locked() {
  for (auto& list : cached_) {
    for (Block* b : list) {
      ranges_.give_back(b->offset, b->bytes);
      blocks_.erase(b->offset);
    }
    list.clear();
  }
  bytes_cached_ = 0;
}

Result<PoolBuffer> TensorPool::acquire(uint64_t bytes) {
  if (Status s = check_size(bytes); !s) return s.error();
  const int cls = size_class(bytes);
  std::lock_guard lock(mu_);
  Block* b = nullptr;
  if (auto& list = cached_[cls]; !list.empty()) {
    b = list.back();
    list.pop_back();
    bytes_cached_ -= b->bytes;
    ++reuse_hits_;
  } else if (!(b = carve_locked(cls))) {
    ++failed_;
    return make_error(MLOS_ERR_NO_MEMORY, "pool full: " + describe_bytes(class_bytes(cls)) + " wanted, " +
                                              describe_bytes(bytes_in_use_) + " of " + describe_bytes(arena_.size()) +
                                              " in use, largest free range " + describe_bytes(ranges_.largest_free()));
  }
  b->in_use = true;
  ++acquires_;
  ++in_use_;
  bytes_in_use_ += b->bytes;
  high_water_ = std::max(high_water_, bytes_in_use_);
  return PoolBuffer{arena_.base() + b->offset, bytes, b->bytes, b->offset};
}

Result<TensorPool::Block*> TensorPool::acquired_block_locked(const void* data, const char* op) {
  const auto* p = static_cast<const char*>(data);
  if (p >= arena_.base() && p < arena_.base() + arena_.size()) {
    auto it = blocks_.find(static_cast<uint64_t>(p - arena_.base()));
    if (it != blocks_.end() && it->second.in_use) return &it->second;
  }
  return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(op) +
                                                   ": not the start of an acquired buffer of this pool "
                                                   "(released already, or never acquired here)");
}

Status TensorPool::release(const void* data) {
  std::lock_guard lock(mu_);
  auto b = acquired_block_locked(data, "release");
  if (!b) return b.error();
  Block* block = *b;
  if (block->pinned) {
    (void)arena_.unlock(block->offset, block->bytes);
    block->pinned = false;
    pinned_bytes_ -= block->bytes;
  }
  block->in_use = false;
  cached_[block->size_class].push_back(block);
  ++releases_;
  --in_use_;
  bytes_in_use_ -= block->bytes;
  bytes_cached_ += block->bytes;
  return Status::Ok();
}

Status TensorPool::prewarm(uint64_t bytes, uint64_t count) {
  if (Status s = check_size(bytes); !s) return s;
  const int cls = size_class(bytes);
  std::lock_guard lock(mu_);
  auto& list = cached_[cls];
  for (Block* b : list) {
    if (Status s = arena_.populate(b->offset, b->bytes); !s) return s;
  }
  while (list.size() < count) {
    // Carve without flushing: a prewarm must not undo earlier ones.
    auto offset = ranges_.carve(class_bytes(cls), class_alignment(cls));
    if (!offset) {
      return make_error(MLOS_ERR_NO_MEMORY, "prewarm: the pool filled up after " + std::to_string(list.size()) +
                                                " of " + std::to_string(count) + " buffers of " +
                                                describe_bytes(class_bytes(cls)) + " (they stay prewarmed)");
    }
    Block* b = &blocks_.emplace(*offset, Block{*offset, class_bytes(cls), cls}).first->second;
    list.push_back(b);
    bytes_cached_ += b->bytes;
    if (Status s = arena_.populate(b->offset, b->bytes); !s) return s;
  }
  return Status::Ok();
}

Status TensorPool::pin(const void* data) {
  std::lock_guard lock(mu_);
  auto b = acquired_block_locked(data, "pin");
  if (!b) return b.error();
  Block* block = *b;
  if (block->pinned || (config_.flags & (MLOS_TMM_LOCKED | MLOS_TMM_CUDA_PINNED)) || arena_.hugetlb()) {
    return Status::Ok();  // locked already, or hugetlb pages (never swapped out)
  }
  if (Status s = arena_.lock(block->offset, block->bytes); !s) return s;
  block->pinned = true;
  pinned_bytes_ += block->bytes;
  return Status::Ok();
}

Status TensorPool::unpin(const void* data) {
  std::lock_guard lock(mu_);
  auto b = acquired_block_locked(data, "unpin");
  if (!b) return b.error();
  Block* block = *b;
  if (config_.flags & (MLOS_TMM_LOCKED | MLOS_TMM_CUDA_PINNED)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "unpin: the pool is locked as a whole (MLOS_TMM_LOCKED or "
                                                 "MLOS_TMM_CUDA_PINNED); its buffers cannot be unpinned one by one");
  }
  if (!block->pinned) return Status::Ok();
  if (Status s = arena_.unlock(block->offset, block->bytes); !s) return s;
  block->pinned = false;
  pinned_bytes_ -= block->bytes;
  return Status::Ok();
}

Result<uint64_t> TensorPool::trim() {
  // Locked pools keep their memory (that is what they were asked for);
  // hugetlb pages are punched only in whole 2 MiB pages, which small
  // buffers do not fill.
  if ((config_.flags & (MLOS_TMM_LOCKED | MLOS_TMM_CUDA_PINNED)) || arena_.hugetlb()) return uint64_t{0};
  std::lock_guard lock(mu_);
  uint64_t freed = 0;
  for (const auto& list : cached_) {
    for (const Block* b : list) {
      if (Status s = arena_.punch(b->offset, b->bytes); !s) return s.error();
      freed += b->bytes;
    }
  }
  return freed;
}

uint64_t TensorPool::buffers_in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

PoolStats TensorPool::stats() const {
  PoolStats s;
  s.flags = config_.flags;
  s.capacity_bytes = arena_.size();
  if (arena_.hugetlb()) {
    s.huge_pages = MLOS_TMM_HUGE_HUGETLB;
  } else if ((config_.flags & MLOS_TMM_HUGE_PAGES) && arena_.huge_page_note().empty()) {
    s.huge_pages = MLOS_TMM_HUGE_THP;
  }
  if (config_.binding && config_.binding->nodes.count() == 1) s.numa_node = config_.binding->nodes.to_vector()[0];
  std::vector<std::pair<uint64_t, uint64_t>> carved;
  {
    std::lock_guard lock(mu_);
    s.acquires = acquires_;
    s.releases = releases_;
    s.reuse_hits = reuse_hits_;
    s.failed_acquires = failed_;
    s.buffers_in_use = in_use_;
    s.bytes_in_use = bytes_in_use_;
    s.bytes_cached = bytes_cached_;
    s.high_water_bytes = high_water_;
    s.locked_bytes = (config_.flags & (MLOS_TMM_LOCKED | MLOS_TMM_CUDA_PINNED)) ? arena_.size() : pinned_bytes_;
    if (config_.binding) {
      for (const auto& [offset, b] : blocks_) carved.emplace_back(offset, b.bytes);
    }
  }
  s.resident_bytes = arena_.resident_bytes();
  s.huge_bytes = arena_.huge_bytes();
  for (const auto& [offset, bytes] : carved) {
    if (auto off = arena_.pages_off_nodes(config_.binding->nodes, offset, bytes)) s.remote_node_pages += *off;
  }
  return s;
}

std::string TensorPool::notes() const {
  std::string out;
  for (const auto& [effect, reason] : notes_) out += effect + ": " + reason + "\n";
  return out;
}

}  // namespace mlos::tmm
