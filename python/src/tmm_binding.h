/* SPDX-License-Identifier: Apache-2.0 */
// Tensor pools for Python (include/mlos/tmm.h): a pool, and buffers whose
// memory torch and numpy see through DLPack without a copy.
#pragma once

#include <nanobind/nanobind.h>

namespace mlos_python {

// Adds _core.TmmPool, _core.TmmBuffer and tmm_pool_create to the module.
void bind_tmm(nanobind::module_& m);

}  // namespace mlos_python
