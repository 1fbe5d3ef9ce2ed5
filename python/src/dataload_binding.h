/* SPDX-License-Identifier: Apache-2.0 */
// The data loader for Python (include/mlos/dataload.h): batches as torch
// tensors on the loader's slots, without a copy.
#pragma once

#include <nanobind/nanobind.h>

namespace mlos_python {

// Adds _core.DataLoader and dataload_start to the module.
void bind_dataload(nanobind::module_& m);

}  // namespace mlos_python
