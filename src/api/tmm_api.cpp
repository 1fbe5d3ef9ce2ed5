// SPDX-License-Identifier: Apache-2.0
// The C API of the tensor memory manager (include/mlos/tmm.h) over
// tmm::TensorPool: handles, argument checks, the job's reservation.
#include <linux/mempolicy.h>
#include <sys/mman.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/api_guard.h"
#include "api/handle_table.h"
#include "api/owned_handle.h"
#include "api/versioned_struct.h"
#include "mlos/tmm.h"
#include "os/memory_arena.h"
#include "os/process_self.h"
#include "tmm/tensor_pool.h"

namespace mlos::api {
namespace {

constexpr uint32_t kKnownFlags = MLOS_TMM_LOCKED | MLOS_TMM_HUGE_PAGES | MLOS_TMM_HUGETLB | MLOS_TMM_CUDA_PINNED |
                                 MLOS_TMM_STRICT_NODE | MLOS_TMM_PRIVATE;
constexpr size_t kMaxNameBytes = 200;

// What a pool handle stands for. The reservation goes back to the job, if
// it is still there, when the pool goes.
struct PoolEntry {
  std::unique_ptr<tmm::TensorPool> pool;
  std::weak_ptr<Job> job;
  uint64_t reserved = 0;
  pid_t creator = 0;

  ~PoolEntry() {
    if (auto j = job.lock()) j->return_pool_bytes(reserved);
  }
};

HandleTable<PoolEntry, mlos_tmm_pool_t, 0x746d /* "tm" */>& pools() {
  static auto* table = new HandleTable<PoolEntry, mlos_tmm_pool_t, 0x746d>();  // leaked: outlives static destructors
  return *table;
}

// Arenas mapped with mlos_tmm_map_arena, by base address.
struct Mappings {
  std::mutex mu;
  std::map<void*, std::unique_ptr<os::MemoryArena>> by_base;
};
Mappings& mappings() {
  static auto* m = new Mappings();
  return *m;
}

std::shared_ptr<PoolEntry> find_pool(const mlos_tmm_pool_t* handle) {
  return owned_by_this_process(pools().find(handle), [](const PoolEntry& e) { return e.creator; },
                               HandleKind{"tensor pool", "destroyed", "create its own"});
}

int fail(const Error& e) { return record_error(e); }
int code_of(const Status& s) { return s ? MLOS_OK : fail(s.error()); }

// Runs body(pool) for a valid pool handle of this process, guarded.
template <class F>
int on_pool(mlos_tmm_pool_t* handle, F&& body) {
  return guarded([&]() -> int {
    auto entry = find_pool(handle);
    if (!entry) return mlos_last_error();
    return body(*entry->pool);
  });
}

// Where the pool's pages go: the node asked for, the job's nodes, or
// nowhere in particular.
Result<std::optional<os::MemoryPolicy>> binding_for(const mlos_tmm_pool_options_t& o, const Job* job) {
  const bool strict = o.flags & MLOS_TMM_STRICT_NODE;
  if (o.numa_node != MLOS_TMM_NODE_AUTO) {
    if (o.numa_node < 0 || o.numa_node >= 1024) {
      return make_error(MLOS_ERR_INVALID_NUMA_NODE, "numa_node " + std::to_string(o.numa_node) +
                                                        " (a node index or MLOS_TMM_NODE_AUTO)");
    }
    os::MemoryPolicy p;
    p.mode = strict ? MPOL_BIND : MPOL_PREFERRED;
    p.nodes.set(o.numa_node);
    return std::optional<os::MemoryPolicy>(p);
  }
  if (!job || job->placement().nodes.empty()) return std::optional<os::MemoryPolicy>();
  os::MemoryPolicy p = os::memory_policy_for(job->placement().memory_policy, job->placement().nodes);
  if (strict) p.mode = MPOL_BIND;
  return std::optional<os::MemoryPolicy>(p);
}

Status check_options(const mlos_tmm_pool_options_t& o) {
  if (o.capacity_bytes == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "capacity_bytes must be > 0");
  if (o.capacity_bytes > (uint64_t{1} << 46)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "capacity_bytes over 64 TiB");
  }
  if (o.flags & ~kKnownFlags) return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown flags in options.flags");
  if (o.reserved != 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "options.reserved must be zero");
  if (o.name) {
    const size_t n = strnlen(o.name, kMaxNameBytes + 1);
    if (n > kMaxNameBytes || std::strchr(o.name, '/')) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "options.name must be under 200 bytes and contain no '/'");
    }
  }
  return Status::Ok();
}


}  // namespace
}  // namespace mlos::api

using namespace mlos;       // NOLINT(google-build-using-namespace)
using namespace mlos::api;  // NOLINT(google-build-using-namespace)

extern "C" {

int mlos_tmm_pool_create(mlos_training_resources_t* resources, const mlos_tmm_pool_options_t* options,
                         mlos_tmm_pool_t** pool) {
  return guarded([&]() -> int {
    if (!options || !pool) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "options and pool must not be NULL"));
    auto given = read_versioned(options);
    if (!given) return fail(given.error());
    mlos_tmm_pool_options_t o = *given;
    std::shared_ptr<Job> job;
    if (resources && !(job = find_job(resources))) return mlos_last_error();
    if (Status s = check_options(o); !s) return fail(s.error());
    auto binding = binding_for(o, job.get());
    if (!binding) return fail(binding.error());
    auto entry = std::make_shared<PoolEntry>();
    entry->creator = os::self_pid();
    const uint64_t rounded = (o.capacity_bytes + 4095) & ~uint64_t{4095};
    if (job) {
      if (Status s = job->reserve_pool_bytes(rounded); !s) return fail(s.error());
      entry->job = job;
      entry->reserved = rounded;
    }
    tmm::PoolConfig config;
    config.capacity = o.capacity_bytes;
    config.flags = o.flags;
    config.binding = *binding;
    config.name = o.name ? o.name : "";
    auto created = tmm::TensorPool::create(config);
    if (!created) return fail(created.error());  // ~PoolEntry returns the reservation
    entry->pool = std::move(*created);
    *pool = pools().add(std::move(entry));
    return MLOS_OK;
  });
}

int mlos_tmm_pool_destroy(mlos_tmm_pool_t* pool) {
  return guarded([&]() -> int {
    auto entry = find_pool(pool);
    if (!entry) return mlos_last_error();
    if (const uint64_t n = entry->pool->buffers_in_use(); n > 0) {
      return fail(make_error(MLOS_ERR_BUSY, std::to_string(n) + " buffers of the pool are still acquired"));
    }
    pools().take(pool);
    return MLOS_OK;
  });
}

int mlos_tmm_acquire(mlos_tmm_pool_t* pool, size_t size, mlos_tmm_buffer_t* buffer) {
  return on_pool(pool, [&](tmm::TensorPool& p) -> int {
    if (!buffer) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "buffer must not be NULL"));
    auto b = p.acquire(size);
    if (!b) return fail(b.error());
    *buffer = mlos_tmm_buffer_t{b->data, b->size, b->capacity, b->offset};
    return MLOS_OK;
  });
}

int mlos_tmm_release(mlos_tmm_pool_t* pool, void* data) {
  return on_pool(pool, [&](tmm::TensorPool& p) { return code_of(p.release(data)); });
}

int mlos_tmm_prewarm(mlos_tmm_pool_t* pool, size_t size, size_t count) {
  return on_pool(pool, [&](tmm::TensorPool& p) { return code_of(p.prewarm(size, count)); });
}

int mlos_tmm_pin(mlos_tmm_pool_t* pool, void* data) {
  return on_pool(pool, [&](tmm::TensorPool& p) { return code_of(p.pin(data)); });
}

int mlos_tmm_unpin(mlos_tmm_pool_t* pool, void* data) {
  return on_pool(pool, [&](tmm::TensorPool& p) { return code_of(p.unpin(data)); });
}

int mlos_tmm_trim(mlos_tmm_pool_t* pool, uint64_t* freed_bytes) {
  return on_pool(pool, [&](tmm::TensorPool& p) -> int {
    auto freed = p.trim();
    if (!freed) return fail(freed.error());
    if (freed_bytes) *freed_bytes = *freed;
    return MLOS_OK;
  });
}

int mlos_tmm_get_stats(mlos_tmm_pool_t* pool, mlos_tmm_stats_t* stats) {
  return on_pool(pool, [&](tmm::TensorPool& p) -> int {
    if (!stats) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "stats must not be NULL"));
    const tmm::PoolStats s = p.stats();
    mlos_tmm_stats_t out{};
    out.struct_size = sizeof out;
    out.huge_pages = s.huge_pages;
    out.numa_node = s.numa_node;
    out.flags = s.flags;
    out.capacity_bytes = s.capacity_bytes;
    out.acquires = s.acquires;
    out.releases = s.releases;
    out.reuse_hits = s.reuse_hits;
    out.failed_acquires = s.failed_acquires;
    out.buffers_in_use = s.buffers_in_use;
    out.bytes_in_use = s.bytes_in_use;
    out.bytes_cached = s.bytes_cached;
    out.high_water_bytes = s.high_water_bytes;
    out.resident_bytes = s.resident_bytes;
    out.locked_bytes = s.locked_bytes;
    out.huge_bytes = s.huge_bytes;
    out.remote_node_pages = s.remote_node_pages;
    return fill_versioned(stats, out);
  });
}

int mlos_tmm_get_notes(mlos_tmm_pool_t* pool, char* buf, size_t len, size_t* needed) {
  return on_pool(pool, [&](tmm::TensorPool& p) -> int {
    return copy_text_out(p.notes(), buf, len, needed, "notes");
  });
}

int mlos_tmm_pool_fd(mlos_tmm_pool_t* pool, int* fd) {
  return on_pool(pool, [&](tmm::TensorPool& p) -> int {
    if (!fd) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "fd must not be NULL"));
    if (p.fd() < 0) return fail(make_error(MLOS_ERR_UNSUPPORTED, "a MLOS_TMM_PRIVATE pool has no descriptor to share"));
    *fd = p.fd();
    return MLOS_OK;
  });
}

int mlos_tmm_map_arena(int fd, mlos_tmm_mapping_t* mapping) {
  return guarded([&]() -> int {
    if (!mapping) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "mapping must not be NULL"));
    auto arena = os::MemoryArena::map_descriptor(fd);
    if (!arena) return fail(arena.error());
    auto owned = std::make_unique<os::MemoryArena>(std::move(*arena));
    *mapping = mlos_tmm_mapping_t{owned->base(), owned->size()};
    Mappings& m = mappings();
    std::lock_guard lock(m.mu);
    m.by_base.emplace(owned->base(), std::move(owned));
    return MLOS_OK;
  });
}

int mlos_tmm_unmap_arena(mlos_tmm_mapping_t* mapping) {
  return guarded([&]() -> int {
    if (!mapping) return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "mapping must not be NULL"));
    std::unique_ptr<os::MemoryArena> arena;
    {
      Mappings& m = mappings();
      std::lock_guard lock(m.mu);
      auto it = m.by_base.find(mapping->base);
      if (it == m.by_base.end() || it->second->size() != mapping->size) {
        return fail(make_error(MLOS_ERR_INVALID_ARGUMENT, "not a mapping made by mlos_tmm_map_arena"));
      }
      arena = std::move(it->second);
      m.by_base.erase(it);
    }
    *mapping = mlos_tmm_mapping_t{nullptr, 0};
    return MLOS_OK;
  });
}

}  // extern "C"
