// SPDX-License-Identifier: Apache-2.0
#include "caller_store.h"

#include <cstdlib>
#include <cstring>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;

namespace mlos_python {

namespace {

nb::handle self_of(void* user_data) { return nb::handle(static_cast<PyObject*>(user_data)); }

// Runs `body` under the GIL, turning a Python exception into a code.
template <class F>
int call_python(F&& body) {
  nb::gil_scoped_acquire gil;
  try {
    body();
    return MLOS_OK;
  } catch (nb::python_error& e) {
    const bool timeout = e.matches(PyExc_TimeoutError);
    e.discard_as_unraisable("mlos_training rendezvous store");
    return timeout ? MLOS_ERR_TIMEOUT : MLOS_ERR_SYSTEM;
  } catch (const std::exception&) {
    return MLOS_ERR_SYSTEM;  // e.g. a method returned something that is not bytes
  }
}

int store_set(void* user_data, const char* key, const void* value, size_t size) {
  return call_python([&] { self_of(user_data).attr("set")(key, nb::bytes(value, size)); });
}

// `got` into a malloc()ed buffer the library frees (none when empty).
void hand_over(const nb::bytes& got, void** value, size_t* size) {
  if (got.size() == 0) return;
  *value = std::malloc(got.size());
  if (*value == nullptr) throw std::bad_alloc();
  std::memcpy(*value, got.c_str(), got.size());
  *size = got.size();
}

int store_get(void* user_data, const char* key, void** value, size_t* size, int64_t timeout_ms) {
  *value = nullptr;
  *size = 0;
  return call_python([&] {
    hand_over(nb::cast<nb::bytes>(self_of(user_data).attr("get")(key, timeout_ms)), value, size);
  });
}

int store_compare_set(void* user_data, const char* key, const void* expected, size_t expected_size,
                      const void* desired, size_t desired_size, void** value, size_t* size) {
  *value = nullptr;
  *size = 0;
  return call_python([&] {
    hand_over(nb::cast<nb::bytes>(self_of(user_data).attr("compare_set")(key, nb::bytes(expected, expected_size),
                                                                         nb::bytes(desired, desired_size))),
              value, size);
  });
}

int store_wait(void* user_data, const char* const* keys, size_t count, int64_t timeout_ms) {
  return call_python([&] {
    std::vector<std::string> names(keys, keys + count);
    self_of(user_data).attr("wait")(names, timeout_ms);
  });
}

void store_release(void* user_data) {
  nb::gil_scoped_acquire gil;
  self_of(user_data).dec_ref();
}

}  // namespace

mlos_collective_store_t caller_store(nb::object store) {
  mlos_collective_store_t s{};
  s.struct_size = sizeof s;
  s.user_data = store.release().ptr();  // the reference `release` drops
  s.set = store_set;
  s.get = store_get;
  s.wait = store_wait;
  s.release = store_release;
  // Only when the store has one (torch's stores do): without it the
  // library does not detect a rank given to two processes.
  if (nb::hasattr(self_of(s.user_data), "compare_set")) s.compare_set = store_compare_set;
  return s;
}

}  // namespace mlos_python
