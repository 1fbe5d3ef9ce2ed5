// SPDX-License-Identifier: Apache-2.0
// Builds without CUDA's headers (cuda.h, nccl.h): every buffer is host
// memory to the collectives, as device_buffer.h says.
#include "collectives/device_buffer.h"
#include "collectives/process_group.h"

namespace mlos::collectives {

std::optional<DeviceBuffer> find_device_buffer(const void*) { return std::nullopt; }

Status ProcessGroup::allreduce_device(const DeviceBuffer&, void*, size_t, DataType, mlos_reduce_op_t) {
  return make_error(MLOS_ERR_UNSUPPORTED, "this libmlos was built without CUDA's headers: no GPU buffers");
}

}  // namespace mlos::collectives
