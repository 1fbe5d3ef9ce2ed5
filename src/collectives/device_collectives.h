/* SPDX-License-Identifier: Apache-2.0 */
// How a group reduces buffers in GPU memory (docs/gpu.md, "Collectives on
// device buffers"), one of two paths, the same on every rank:
//   NCCL     when every rank has a usable NCCL of the same version and the
//            ranks' buffers sit on distinct GPUs (NCCL's own rule: one rank
//            per GPU); a communicator per group, created without blocking
//            and waited for within the group's timeout;
//   staged   otherwise: the buffer is copied into a staging buffer of a
//            TMM pool registered with CUDA (pinned, bound like the job's
//            memory), reduced there by the group's Gloo all-reduce, and
//            copied back.
// The ranks agree on the path on their first device call (an all-gather
// of what each has, over the group's Gloo mesh) and keep it for the
// group's life. Every rank must then call with device buffers in the same
// order, as with any collective.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "collectives/cuda_driver.h"
#include "collectives/nccl_library.h"
#include "core/status.h"
#include "mlos/training.h"
#include "os/kernel.h"

namespace mlos::tmm {
class TensorPool;
}

namespace mlos::collectives {

class ProcessGroup;
enum class DataType;

class DeviceCollectives {
 public:
  // `group` outlives this object (it owns it).
  DeviceCollectives(ProcessGroup& group, const CudaDriver& cuda, std::optional<os::MemoryPolicy> staging_binding);
  ~DeviceCollectives();
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;

  // In place over `count` elements at `data`, which lies in `where`.
  // Errors: as ProcessGroup::allreduce; INVALID_ARGUMENT for a buffer on
  // another GPU than the one the group's NCCL communicator was made on.
  Status allreduce(const DeviceBuffer& where, void* data, size_t count, DataType type, mlos_reduce_op_t op);

  // "NCCL 2.28.3, one GPU per rank" or "staged through pinned host memory:
  // <why not NCCL>"; empty before the first call.
  const std::string& path() const { return path_; }
  // NCCL failed or timed out: the communicator was aborted, and the group
  // must be created again (as after a Gloo error).
  bool broken() const { return broken_; }

 private:
  Status agree(const DeviceBuffer& where);
  Status start_nccl(const DeviceBuffer& where);
  Status nccl_allreduce(const DeviceBuffer& where, void* data, size_t count, DataType type, mlos_reduce_op_t op);
  Status staged_allreduce(const DeviceBuffer& where, void* data, size_t count, DataType type, mlos_reduce_op_t op);
  // Polls until `done` says yes, NCCL reports an error, or the group's
  // timeout passes; the last two abort the communicator.
  template <class Done>
  Status wait_for_nccl(const char* what, Done&& done);
  Error break_with(int code, const std::string& message);
  Status ensure_staging(size_t bytes);
  void drop_staging();

  ProcessGroup& group_;
  const CudaDriver& cuda_;
  const NcclLibrary& nccl_;
  std::optional<os::MemoryPolicy> staging_binding_;
  std::string path_;
  bool use_nccl_ = false;
  bool broken_ = false;
  ncclComm_t comm_ = nullptr;
  std::array<unsigned char, 16> comm_gpu_{};
  std::unique_ptr<tmm::TensorPool> staging_;
  bool staging_pinned_ = false;
};

}  // namespace mlos::collectives
