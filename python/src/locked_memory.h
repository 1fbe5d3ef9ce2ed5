/* SPDX-License-Identifier: Apache-2.0 */
// Locked memory for Python: checkpoint buffers of a job
// (mlos_training_alloc_checkpoint_buffer) exported through the buffer
// protocol, so torch.frombuffer / memoryview see the library's memory
// without a copy, and registered gradient buffers
// (mlos_training_register_buffer).
#pragma once

#include <nanobind/nanobind.h>

namespace mlos_python {

// Adds _core.LockedMemory and the alloc/free/register/unregister/notes
// functions to the module.
void bind_locked_memory(nanobind::module_& m);

}  // namespace mlos_python
