// SPDX-License-Identifier: Apache-2.0
// See dataload_binding.h. A batch's tensors point into its slot; the slot
// goes back to the helper when the last of them is freed. Freeing can
// happen on any thread (torch frees a tensor where its last reference
// drops), while the C API takes one thread at a time, so a freed slot is
// queued and handed back by whichever call holds the loader next, and
// next() waits in short steps so that it hands back slots freed meanwhile
// (the helper may be waiting for exactly those).
#include "dataload_binding.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <mlos/dataload.h>
#include <mlos/errors.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace mlos_python {
namespace {

constexpr int64_t kStepMs = 50;

struct Loader {
  mlos_dataload_t* handle = nullptr;
  std::mutex mu;             // one C call at a time
  std::mutex freed_mu;       // guards freed
  std::vector<uint32_t> freed;
  bool closed = false;

  ~Loader() {
    if (handle) mlos_dataload_stop(handle);
  }
  // With mu held: hands back the slots freed since the last call.
  void hand_back_locked() {
    std::vector<uint32_t> slots;
    {
      std::lock_guard lock(freed_mu);
      slots.swap(freed);
    }
    for (uint32_t s : slots) mlos_dataload_release_batch(handle, s);
  }
  void slot_freed(uint32_t slot) {
    {
      std::lock_guard lock(freed_mu);
      freed.push_back(slot);
    }
    if (mu.try_lock()) {
      hand_back_locked();
      mu.unlock();
    }
  }
};

// Owner of one batch's tensors: hands the slot back when it goes. Made in
// place only (a moved-from copy would hand it back too early).
struct SlotRef {
  SlotRef(std::shared_ptr<Loader> l, uint32_t s) : loader(std::move(l)), slot(s) {}
  SlotRef(const SlotRef&) = delete;
  SlotRef& operator=(const SlotRef&) = delete;
  ~SlotRef() { loader->slot_freed(slot); }
  const std::shared_ptr<Loader> loader;
  const uint32_t slot;
};

struct DataLoader {
  std::shared_ptr<Loader> loader;
  uint64_t sample_bytes = 0;

  Loader& live() {
    if (!loader || loader->closed) throw nb::value_error("the loader is closed");
    return *loader;
  }

  std::pair<int, nb::dict> info() {
    Loader& l = live();
    std::lock_guard lock(l.mu);
    mlos_dataload_info_t i{};
    i.struct_size = sizeof i;
    nb::dict d;
    const int rc = mlos_dataload_get_info(l.handle, &i);
    d["samples"] = i.samples;
    d["samples_per_epoch"] = i.samples_per_epoch;
    d["batches_per_epoch"] = i.batches_per_epoch;
    d["classes"] = i.classes;
    d["sample_bytes"] = i.sample_bytes;
    d["workers"] = i.workers;
    d["slots"] = i.slots;
    d["helper_pid"] = i.helper_pid;
    return {rc, d};
  }

  int start_epoch(uint64_t epoch) {
    Loader& l = live();
    std::lock_guard lock(l.mu);
    l.hand_back_locked();
    return mlos_dataload_start_epoch(l.handle, epoch);
  }

  // (rc, (image bytes, labels, skipped, index)); rc MLOS_DATALOAD_END at the end.
  std::pair<int, nb::object> next(int64_t timeout_ms) {
    Loader& l = live();
    mlos_dataload_batch_t b{};
    int rc = MLOS_ERR_TIMEOUT;
    const auto start = std::chrono::steady_clock::now();
    {
      nb::gil_scoped_release unlocked;
      for (;;) {
        {
          std::lock_guard lock(l.mu);
          l.hand_back_locked();
          rc = mlos_dataload_next(l.handle, &b, kStepMs);
        }
        if (rc != MLOS_ERR_TIMEOUT) break;
        const auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        if (timeout_ms >= 0 && waited >= timeout_ms) break;
      }
    }
    if (rc == MLOS_DATALOAD_END) return {rc, nb::none()};
    if (rc != MLOS_OK) return {rc, nb::str(mlos_last_error_message())};
    auto* keep = new std::shared_ptr<SlotRef>(std::make_shared<SlotRef>(loader, b.slot));
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<SlotRef>*>(p); });
    // Flat 1-D arrays (array-API objects with __dlpack__); the Python side
    // makes torch tensors of them and shapes them.
    const size_t image_bytes[1] = {static_cast<size_t>(b.count) * sample_bytes};
    nb::object images = nb::cast(nb::ndarray<nb::array_api, uint8_t, nb::ndim<1>, nb::device::cpu>(b.images, 1, image_bytes, owner),
                                 nb::rv_policy::reference);
    const size_t label_count[1] = {b.count};
    nb::object labels = nb::cast(nb::ndarray<nb::array_api, int64_t, nb::ndim<1>, nb::device::cpu>(
                                     const_cast<int64_t*>(b.labels), 1, label_count, owner),
                                 nb::rv_policy::reference);
    return {MLOS_OK, nb::make_tuple(images, labels, b.skipped, b.index)};
  }

  std::pair<int, nb::dict> stats() {
    Loader& l = live();
    std::lock_guard lock(l.mu);
    mlos_dataload_stats_t st{};
    st.struct_size = sizeof st;
    nb::dict d;
    const int rc = mlos_dataload_get_stats(l.handle, &st);
    d["reader"] = st.reader == MLOS_DATALOAD_READER_IO_URING ? "io_uring" : "pread";
    d["read_ahead_bytes"] = st.read_ahead_bytes;
    d["workers"] = st.workers;
    d["active_workers"] = st.active_workers;
    d["batches"] = st.batches;
    d["wait_seconds"] = static_cast<double>(st.wait_ns) / 1e9;
    return {rc, d};
  }

  std::pair<int, std::string> errors() { return text(mlos_dataload_get_errors); }
  std::pair<int, std::string> notes() { return text(mlos_dataload_get_notes); }

  // One of the loader's texts (the get_notes buffer contract).
  std::pair<int, std::string> text(int (*get)(mlos_dataload_t*, char*, size_t, size_t*)) {
    Loader& l = live();
    std::lock_guard lock(l.mu);
    size_t needed = 0;
    int rc = get(l.handle, nullptr, 0, &needed);
    if (rc != MLOS_ERR_BUFFER_TOO_SMALL) return {rc, ""};
    std::string out(needed, '\0');
    rc = get(l.handle, out.data(), out.size(), &needed);
    out.resize(needed > 0 ? needed - 1 : 0);
    return {rc, out};
  }

  // The helper stops when the last batch tensor is gone too.
  void close() {
    if (loader) loader->closed = true;
    loader.reset();
  }
};

std::pair<int, nb::object> dataload_start(uintptr_t resources, const std::string& source, uint32_t batch_size,
                                          uint32_t image_size, uint32_t transform, uint32_t layout, uint64_t seed,
                                          uint32_t rank, uint32_t world_size, uint32_t flags, uint32_t workers,
                                          uint32_t prefetch) {
  mlos_dataload_options_t o{};
  o.struct_size = sizeof o;
  o.source = source.c_str();
  o.batch_size = batch_size;
  o.image_size = image_size;
  o.transform = transform;
  o.layout = layout;
  o.seed = seed;
  o.rank = rank;
  o.world_size = world_size;
  o.flags = flags;
  o.workers = workers;
  o.prefetch = prefetch;
  mlos_dataload_t* handle = nullptr;
  int rc;
  {
    nb::gil_scoped_release unlocked;  // the helper lists the dataset
    rc = mlos_dataload_start(reinterpret_cast<mlos_training_resources_t*>(resources), &o, &handle);
  }
  if (rc != MLOS_OK) return {rc, nb::none()};
  DataLoader d;
  d.loader = std::make_shared<Loader>();
  d.loader->handle = handle;
  mlos_dataload_info_t info{};
  info.struct_size = sizeof info;
  mlos_dataload_get_info(handle, &info);
  d.sample_bytes = info.sample_bytes;
  return {MLOS_OK, nb::cast(std::move(d))};
}

}  // namespace

void bind_dataload(nb::module_& m) {
  m.attr("DATALOAD_END") = MLOS_DATALOAD_END;
  m.attr("DATALOAD_NO_SHUFFLE") = static_cast<uint32_t>(MLOS_DATALOAD_NO_SHUFFLE);
  m.attr("DATALOAD_DROP_LAST") = static_cast<uint32_t>(MLOS_DATALOAD_DROP_LAST);
  m.attr("DATALOAD_STRICT") = static_cast<uint32_t>(MLOS_DATALOAD_STRICT);
  m.attr("DATALOAD_IN_ORDER") = static_cast<uint32_t>(MLOS_DATALOAD_IN_ORDER);
  m.attr("DATALOAD_PREAD") = static_cast<uint32_t>(MLOS_DATALOAD_PREAD);
  nb::class_<DataLoader>(m, "DataLoader")
      .def("info", &DataLoader::info)
      .def("start_epoch", &DataLoader::start_epoch)
      .def("next", &DataLoader::next, "timeout_ms"_a)
      .def("errors", &DataLoader::errors)
      .def("stats", &DataLoader::stats)
      .def("notes", &DataLoader::notes)
      .def("close", &DataLoader::close)
      .def_prop_ro("closed", [](const DataLoader& d) { return !d.loader; });
  m.def("dataload_start", &dataload_start, "resources"_a, "source"_a, "batch_size"_a, "image_size"_a, "transform"_a,
        "layout"_a, "seed"_a, "rank"_a, "world_size"_a, "flags"_a, "workers"_a, "prefetch"_a);
}

}  // namespace mlos_python
