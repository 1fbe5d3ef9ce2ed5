/* SPDX-License-Identifier: Apache-2.0 */
// NCCL, loaded at run time: $MLOS_NCCL_LIBRARY, else the libnccl.so.2 the
// process already has (PyTorch's own; two NCCLs in one process would not
// share state), else the system's. libmlos has no link-time dependency on
// it; a machine without it reduces device buffers through host memory.
#pragma once

#include <string>

#include <nccl.h>

#include "core/status.h"

namespace mlos::collectives {

struct NcclLibrary {
  // The oldest NCCL used: nonblocking communicator creation (2.14), so
  // that a rank that never joins ends in the group's timeout, not a hang.
  static constexpr int kOldestVersion = NCCL_VERSION(2, 14, 0);

  // Loaded once per process. usable() false: why() says why.
  static const NcclLibrary& get();
  bool usable() const { return why_not.empty(); }
  const std::string& why() const { return why_not; }
  std::string describe(ncclResult_t r) const;  // "NCCL error N (text)"

  int version = 0;  // NCCL_VERSION(major, minor, patch) form
  std::string why_not;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank_config)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  const char* (*get_error_string)(ncclResult_t) = nullptr;
};

}  // namespace mlos::collectives
