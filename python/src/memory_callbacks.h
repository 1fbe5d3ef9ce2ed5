/* SPDX-License-Identifier: Apache-2.0 */
// Python callables as memory-pressure callbacks. The library calls them on
// its "mlos-memwatch" thread; the trampoline takes the GIL and calls
// fn(level: int, info: dict). An exception the callable raises is printed
// as unraisable (there is no caller to give it to). Each registration
// holds a reference to the callable until it is unregistered.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>

namespace mlos_python {

// Both return the C call's code; on failure nothing is kept. A non-callable
// fn is refused by nanobind with TypeError before the library sees it.
int register_memory_callback(uintptr_t handle, nanobind::callable fn);
int unregister_memory_callback(uintptr_t handle, nanobind::object fn);

// (rc, dict) with the fields of mlos_memory_pressure_info_t.
nanobind::tuple memory_pressure(uintptr_t handle);

}  // namespace mlos_python
