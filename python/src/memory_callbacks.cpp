// SPDX-License-Identifier: Apache-2.0
#include "memory_callbacks.h"

#include <map>
#include <mutex>
#include <utility>

#include <mlos/training.h>

namespace nb = nanobind;

namespace mlos_python {

namespace {

mlos_training_resources_t* res(uintptr_t h) { return reinterpret_cast<mlos_training_resources_t*>(h); }

nb::dict info_dict(const mlos_memory_pressure_info_t& i) {
  nb::dict d;
  d["level"] = static_cast<int>(i.level);
  d["available_bytes"] = i.available_bytes;
  d["budget_bytes"] = i.budget_bytes;
  d["psi_some_avg10"] = i.psi_some_avg10;
  d["psi_full_avg10"] = i.psi_full_avg10;
  d["source"] = i.source;
  d["detected_ns"] = i.detected_ns;
  d["sequence"] = i.sequence;
  return d;
}

void trampoline(mlos_memory_pressure_level_t level, const mlos_memory_pressure_info_t* info, void* user_data) {
  nb::gil_scoped_acquire gil;
  try {
    nb::handle(static_cast<PyObject*>(user_data))(static_cast<int>(level), info_dict(*info));
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("mlos_training memory-pressure callback");
  }
}

// The reference each registration holds, by (handle, callable): the
// user_data the library knows is the callable's PyObject*.
std::mutex registry_mu;
std::map<std::pair<uintptr_t, PyObject*>, nb::object>& registry() {
  static auto* r = new std::map<std::pair<uintptr_t, PyObject*>, nb::object>;
  return *r;
}

}  // namespace

int register_memory_callback(uintptr_t handle, nb::callable fn) {
  PyObject* key = fn.ptr();
  int rc;
  {
    nb::gil_scoped_release unlocked;  // the first call may be made at once, on the watcher thread
    rc = mlos_training_register_memory_callback(res(handle), trampoline, key);
  }
  if (rc == MLOS_OK) {
    std::lock_guard lock(registry_mu);
    registry()[{handle, key}] = std::move(fn);
  }
  return rc;
}

int unregister_memory_callback(uintptr_t handle, nb::object fn) {
  int rc;
  {
    nb::gil_scoped_release unlocked;  // waits for a call in flight, which needs the GIL
    rc = mlos_training_unregister_memory_callback(res(handle), trampoline, fn.ptr());
  }
  std::lock_guard lock(registry_mu);
  registry().erase({handle, fn.ptr()});  // also when the handle is gone: nothing will call it
  return rc;
}

nb::tuple memory_pressure(uintptr_t handle) {
  mlos_memory_pressure_info_t info{};
  info.struct_size = sizeof info;
  const int rc = mlos_training_get_memory_pressure(res(handle), &info);
  return nb::make_tuple(rc, rc == MLOS_OK ? nb::object(info_dict(info)) : nb::none());
}

}  // namespace mlos_python
