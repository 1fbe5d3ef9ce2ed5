/* SPDX-License-Identifier: Apache-2.0 */
// A Python object as the library's rendezvous store: fills an
// mlos_collective_store_t whose callbacks call the object's
//   set(key: str, value: bytes)
//   get(key: str, timeout_ms: int) -> bytes
//   wait(keys: list[str], timeout_ms: int)
// with the GIL held (the library calls them from its own thread while the
// Python caller waits with the GIL released). A callback whose method
// raises TimeoutError returns MLOS_ERR_TIMEOUT, any other exception
// MLOS_ERR_SYSTEM (the exception is printed as unraisable). The struct
// holds a reference to the object until the library calls `release`.
#pragma once

#include <nanobind/nanobind.h>

#include <mlos/collectives.h>

namespace mlos_python {

mlos_collective_store_t caller_store(nanobind::object store);

}  // namespace mlos_python
