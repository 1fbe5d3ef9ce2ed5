/* SPDX-License-Identifier: Apache-2.0 */
// The durable checkpoint writer and reader (include/mlos/checkpoint.h) for
// Python: writer handles travel as integers (the library checks them), data
// as any object with the buffer protocol, read without a copy and with the
// GIL released while the library writes.
#pragma once

#include <nanobind/nanobind.h>

namespace mlos_python {

void bind_checkpoint(nanobind::module_& m);

}  // namespace mlos_python
