// SPDX-License-Identifier: Apache-2.0
// See locked_memory.h. The Python layer (mlos_training/pinned.py) owns the
// rules; this file only moves addresses and codes.
#include "locked_memory.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <mlos/errors.h>
#include <mlos/training.h>

#include "text_out.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlos_python {
namespace {

mlos_training_resources_t* handle(uintptr_t h) { return reinterpret_cast<mlos_training_resources_t*>(h); }

// A view of [addr, addr+size) that Python objects can hold: the buffer
// protocol exports it writable and counts the exports. It does not own the
// job's buffer. adopt() is for the moment the job's buffer is gone (release
// of the allocation) while tensors still point into it: it maps ordinary
// anonymous memory at the same address (MAP_FIXED_NOREPLACE: never over a
// mapping someone else made meanwhile), which this object then owns and
// unmaps when the last holder lets go. The contents are lost, the address
// stays valid.
struct LockedMemory {
  uintptr_t addr = 0;
  size_t size = 0;
  size_t owned_bytes = 0;  // > 0 once adopt() mapped the range
  Py_ssize_t exports = 0;

  ~LockedMemory() {
    if (owned_bytes) munmap(reinterpret_cast<void*>(addr), owned_bytes);
  }
};

int get_buffer(PyObject* self, Py_buffer* view, int flags) {
  auto* m = nb::inst_ptr<LockedMemory>(nb::handle(self));
  if (m->addr == 0) {
    PyErr_SetString(PyExc_BufferError, "locked memory no longer exists");
    view->obj = nullptr;
    return -1;
  }
  if (PyBuffer_FillInfo(view, self, reinterpret_cast<void*>(m->addr), static_cast<Py_ssize_t>(m->size), 0, flags) != 0)
    return -1;
  ++m->exports;
  return 0;
}

void release_buffer(PyObject* self, Py_buffer*) { --nb::inst_ptr<LockedMemory>(nb::handle(self))->exports; }

PyType_Slot locked_memory_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(get_buffer)},
                                     {Py_bf_releasebuffer, reinterpret_cast<void*>(release_buffer)},
                                     {0, nullptr}};

// 0 or -errno.
int adopt(LockedMemory& m) {
  if (m.owned_bytes || m.addr == 0) return 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = (m.size + page - 1) / page * page;
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
  void* p = mmap(reinterpret_cast<void*>(m.addr), bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return -errno;
  if (reinterpret_cast<uintptr_t>(p) != m.addr) {  // a kernel without NOREPLACE treats it as a hint
    munmap(p, bytes);
    return -EEXIST;
  }
  m.owned_bytes = bytes;
  return 0;
}

}  // namespace

void bind_locked_memory(nb::module_& m) {
  nb::class_<LockedMemory>(m, "LockedMemory", nb::type_slots(locked_memory_slots))
      .def(nb::init<>())
      .def("__init__", [](LockedMemory* self, uintptr_t addr, size_t size) { new (self) LockedMemory{addr, size, 0, 0}; })
      .def_ro("address", &LockedMemory::addr)
      .def_ro("size", &LockedMemory::size)
      .def_ro("exports", &LockedMemory::exports)
      .def_prop_ro("adopted", [](const LockedMemory& l) { return l.owned_bytes != 0; })
      .def("adopt", &adopt);

  // rc is MLOS_OK or mlos_last_error() (the C call returns NULL).
  // (rc, address, locked): with allow_unlocked, an ordinary buffer when the
  // kernel refuses the lock (MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED).
  m.def(
      "alloc_checkpoint_buffer",
      [](uintptr_t h, size_t size, bool allow_unlocked) {
        bool locked = false;
        void* p = mlos_training_alloc_checkpoint_buffer_ex(
            handle(h), size, allow_unlocked ? MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED : 0u, &locked);
        return std::tuple<int, uintptr_t, bool>(p ? MLOS_OK : mlos_last_error(), reinterpret_cast<uintptr_t>(p),
                                                p != nullptr && locked);
      },
      nb::arg("handle"), nb::arg("size"), nb::arg("allow_unlocked") = false);
  m.def("free_checkpoint_buffer", [](uintptr_t h, uintptr_t addr) {
    return mlos_training_free_checkpoint_buffer(handle(h), reinterpret_cast<void*>(addr));
  });
  m.def("register_buffer", [](uintptr_t h, uintptr_t addr, size_t size, int kind) {
    return mlos_training_register_buffer(handle(h), reinterpret_cast<void*>(addr), size,
                                         static_cast<mlos_buffer_kind_t>(kind));
  });
  m.def("unregister_buffer", [](uintptr_t h, uintptr_t addr) {
    return mlos_training_unregister_buffer(handle(h), reinterpret_cast<void*>(addr));
  });
  m.def("notes", [](uintptr_t h) { return text_out(&mlos_training_get_notes, h); });
}

}  // namespace mlos_python
