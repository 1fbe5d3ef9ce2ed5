// SPDX-License-Identifier: Apache-2.0
// See tmm_binding.h. Lifetimes, so that no Python object can make the
// library touch freed memory:
//  - A Block (one acquired buffer) holds the Pool it came from; when the
//    last holder of the Block goes (the TmmBuffer object and every DLPack
//    export of it: torch tensors, numpy arrays), the buffer is released to
//    the pool.
//  - The Pool's C handle is destroyed when the last holder of the Pool goes
//    (the TmmPool object and every Block), so mlos_tmm_pool_destroy never
//    meets a buffer still out. close() only stops new acquires.
// mlos_training/tmm.py turns the codes into MLOSError.
#include "tmm_binding.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <memory>
#include <string>

#include <mlos/errors.h>
#include <mlos/tmm.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace mlos_python {
namespace {

struct Pool {
  mlos_tmm_pool_t* handle = nullptr;
  bool closed = false;
  ~Pool() {
    if (handle) mlos_tmm_pool_destroy(handle);
  }
};

struct Block {
  std::shared_ptr<Pool> pool;
  mlos_tmm_buffer_t buffer{};
  ~Block() {
    if (pool && buffer.data) mlos_tmm_release(pool->handle, buffer.data);
  }
};

// What Python holds for one acquired buffer.
struct TmmBuffer {
  std::shared_ptr<Block> block;  // null once released
  uint64_t address = 0, size = 0, capacity = 0, offset = 0;

  // 0, or INVALID_ARGUMENT when released already, INVALID_HANDLE when the
  // pool was closed (the memory then goes back once nothing views it).
  std::pair<int, std::string> release() {
    if (!block) return {MLOS_ERR_INVALID_ARGUMENT, "buffer released already"};
    if (block->pool->closed) return {MLOS_ERR_INVALID_HANDLE, "the pool is closed"};
    block.reset();  // goes back now, or when the last tensor on it goes
    return {MLOS_OK, ""};
  }

  // The whole buffer (capacity bytes) as a 1-D uint8 CPU array whose owner
  // keeps the Block alive: nanobind's array-API object, which has
  // __dlpack__ (versioned when asked, so numpy sees it writable),
  // __dlpack_device__ and the buffer protocol.
  nb::object view() {
    if (!block) throw nb::value_error("buffer released already");
    auto* keep = new std::shared_ptr<Block>(block);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<Block>*>(p); });
    const size_t shape[1] = {static_cast<size_t>(capacity)};
    nb::ndarray<nb::array_api, uint8_t, nb::ndim<1>, nb::device::cpu> array(block->buffer.data, 1, shape, owner);
    return nb::cast(array, nb::rv_policy::reference);
  }
};

struct TmmPool {
  std::shared_ptr<Pool> pool;

  std::pair<int, nb::object> acquire(uint64_t size) {
    if (!pool || pool->closed) return {MLOS_ERR_INVALID_HANDLE, nb::str("the pool is closed")};
    auto block = std::make_shared<Block>();
    block->pool = pool;
    const int rc = mlos_tmm_acquire(pool->handle, size, &block->buffer);
    if (rc != MLOS_OK) {
      block->buffer.data = nullptr;  // nothing to release
      block->pool = nullptr;
      return {rc, nb::str(mlos_last_error_message())};
    }
    TmmBuffer b;
    b.address = reinterpret_cast<uintptr_t>(block->buffer.data);
    b.size = block->buffer.size;
    b.capacity = block->buffer.capacity;
    b.offset = block->buffer.offset;
    b.block = std::move(block);
    return {MLOS_OK, nb::cast(std::move(b))};
  }

  mlos_tmm_pool_t* live() const { return pool && !pool->closed ? pool->handle : nullptr; }

  std::pair<int, nb::dict> stats() const {
    mlos_tmm_stats_t s{};
    s.struct_size = sizeof s;
    nb::dict d;
    const int rc = mlos_tmm_get_stats(live(), &s);
    if (rc != MLOS_OK) return {rc, d};
    d["huge_pages"] = s.huge_pages == MLOS_TMM_HUGE_HUGETLB ? "hugetlb" : s.huge_pages == MLOS_TMM_HUGE_THP ? "thp"
                                                                                                        : "none";
    d["numa_node"] = s.numa_node;
    d["capacity_bytes"] = s.capacity_bytes;
    d["acquires"] = s.acquires;
    d["releases"] = s.releases;
    d["reuse_hits"] = s.reuse_hits;
    d["failed_acquires"] = s.failed_acquires;
    d["buffers_in_use"] = s.buffers_in_use;
    d["bytes_in_use"] = s.bytes_in_use;
    d["bytes_cached"] = s.bytes_cached;
    d["high_water_bytes"] = s.high_water_bytes;
    d["resident_bytes"] = s.resident_bytes;
    d["locked_bytes"] = s.locked_bytes;
    d["huge_bytes"] = s.huge_bytes;
    d["remote_node_pages"] = s.remote_node_pages;
    return {rc, d};
  }

  std::pair<int, std::string> notes() const {
    size_t needed = 0;
    int rc = mlos_tmm_get_notes(live(), nullptr, 0, &needed);
    if (rc != MLOS_ERR_BUFFER_TOO_SMALL) return {rc, ""};
    std::string text(needed, '\0');
    rc = mlos_tmm_get_notes(live(), text.data(), text.size(), &needed);
    text.resize(needed > 0 ? needed - 1 : 0);
    return {rc, text};
  }
};

std::pair<int, nb::object> pool_create(uintptr_t resources, uint64_t capacity, uint32_t flags, int32_t node,
                                       const std::string& name) {
  mlos_tmm_pool_options_t o{};
  o.struct_size = sizeof o;
  o.capacity_bytes = capacity;
  o.flags = flags;
  o.numa_node = node;
  o.name = name.empty() ? nullptr : name.c_str();
  mlos_tmm_pool_t* handle = nullptr;
  int rc;
  {
    nb::gil_scoped_release unlocked;  // a locked or CUDA-pinned arena faults in all of its pages
    rc = mlos_tmm_pool_create(reinterpret_cast<mlos_training_resources_t*>(resources), &o, &handle);
  }
  if (rc != MLOS_OK) return {rc, nb::none()};
  TmmPool p;
  p.pool = std::make_shared<Pool>();
  p.pool->handle = handle;
  return {MLOS_OK, nb::cast(std::move(p))};
}

}  // namespace

void bind_tmm(nb::module_& m) {
  m.attr("TMM_LOCKED") = static_cast<uint32_t>(MLOS_TMM_LOCKED);
  m.attr("TMM_HUGE_PAGES") = static_cast<uint32_t>(MLOS_TMM_HUGE_PAGES);
  m.attr("TMM_HUGETLB") = static_cast<uint32_t>(MLOS_TMM_HUGETLB);
  m.attr("TMM_CUDA_PINNED") = static_cast<uint32_t>(MLOS_TMM_CUDA_PINNED);
  m.attr("TMM_STRICT_NODE") = static_cast<uint32_t>(MLOS_TMM_STRICT_NODE);
  m.attr("TMM_PRIVATE") = static_cast<uint32_t>(MLOS_TMM_PRIVATE);
  m.attr("TMM_NODE_AUTO") = MLOS_TMM_NODE_AUTO;

  nb::class_<TmmBuffer>(m, "TmmBuffer")
      .def_ro("address", &TmmBuffer::address)
      .def_ro("size", &TmmBuffer::size)
      .def_ro("capacity", &TmmBuffer::capacity)
      .def_ro("offset", &TmmBuffer::offset)
      .def_prop_ro("released", [](const TmmBuffer& b) { return !b.block; })
      .def("release", &TmmBuffer::release)
      .def("view", &TmmBuffer::view);

  nb::class_<TmmPool>(m, "TmmPool")
      .def("acquire", &TmmPool::acquire, "size"_a)
      .def("prewarm", [](TmmPool& p, uint64_t size, uint64_t count) {
        nb::gil_scoped_release unlocked;
        return mlos_tmm_prewarm(p.live(), size, count);
      })
      .def("trim", [](TmmPool& p) {
        uint64_t freed = 0;
        const int rc = mlos_tmm_trim(p.live(), &freed);
        return std::make_pair(rc, freed);
      })
      .def("fileno", [](TmmPool& p) {
        int fd = -1;
        const int rc = mlos_tmm_pool_fd(p.live(), &fd);
        return std::make_pair(rc, fd);
      })
      .def("stats", &TmmPool::stats)
      .def("notes", &TmmPool::notes)
      .def_prop_ro("closed", [](const TmmPool& p) { return !p.live(); })
      .def("close", [](TmmPool& p) {
        if (p.pool) p.pool->closed = true;
        p.pool.reset();  // the handle goes with the last buffer
      });

  m.def("tmm_pool_create", &pool_create, "resources"_a, "capacity"_a, "flags"_a, "numa_node"_a, "name"_a);
}

}  // namespace mlos_python
