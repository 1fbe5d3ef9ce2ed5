/* SPDX-License-Identifier: Apache-2.0 */
// Registers host memory with CUDA as pinned (page-locked, DMA-able), so
// cudaMemcpyAsync from it is a real asynchronous copy. The CUDA runtime is
// loaded with dlopen on first use: libmlos has no link-time dependency on
// CUDA, and a machine without it gets UNSUPPORTED with the reason.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace mlos::os {

// cudaHostRegister(addr, bytes, cudaHostRegisterPortable). UNSUPPORTED when
// no CUDA runtime can be loaded or CUDA refuses (no GPU, no driver): the
// message carries cudaGetErrorString.
Status cuda_register_host(void* addr, uint64_t bytes);
// cudaHostUnregister(addr); errors are ignored (the memory is about to go).
void cuda_unregister_host(void* addr);

}  // namespace mlos::os
