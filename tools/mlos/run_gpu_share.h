/* SPDX-License-Identifier: Apache-2.0 */
// mlos run --gpu-memory SIZE --gpu-share PCT: the job's GPU limits, set up
// for CMD (docs/gpu.md, "Sharing a GPU"). Before the claim: the share file
// the job's processes keep their books in, in the runtime directory, named
// after this process (which becomes CMD). After the grant: CMD's
// environment, which preloads the interposer and names the file. With an
// MPS control daemon running, MPS enforces the compute share
// (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and launches are not throttled.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace mlos::cli {

struct GpuShareRequest {
  uint64_t memory_limit = 0;  // bytes per GPU; 0 = no cap
  int share_percent = 0;      // 1..100; 0 = none
  bool wanted() const { return memory_limit != 0 || share_percent != 0; }
};

// --gpu-memory ("" = not given) and --gpu-share (-1 = not given), checked:
// each needs --gpus; SIZE > 0, PCT 1..100. INVALID_ARGUMENT saying which.
Result<GpuShareRequest> parse_gpu_share(const std::string& memory, int share_percent, bool has_gpus);

struct GpuShareSetup {
  std::string library;     // the interposer
  std::string share_file;  // the job's books
  std::string mechanism;   // "throttle" or "mps" ("" without a compute share)
  std::string note;        // what the user should know (MPS found or not)
};

// Finds the interposer (UNSUPPORTED if this build has none), detects MPS,
// and creates the share file (O_EXCL, O_NOFOLLOW, mode 0600) in
// <runtime dir>/gpushare, first removing those of processes that have
// exited. PERMISSION, naming the path and the reason, when the runtime
// directory or gpushare/ is not this user's own (os/own_directory.h):
// then nothing in it is removed, created or mapped.
Result<GpuShareSetup> prepare_gpu_share(const GpuShareRequest& request);
// CMD's environment: LD_PRELOAD (the interposer first, what was there
// after), MLOS_GPUSHARE_STATE, MLOS_GPU_MEMORY_LIMIT, MLOS_GPU_SHARE,
// MLOS_GPU_SHARE_MECHANISM, and with MPS CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
void export_gpu_share(const GpuShareRequest& request, const GpuShareSetup& setup);
// "8.0 GiB per GPU, 50 % compute (throttle)" for mlos run --verbose.
std::string gpu_share_text(const GpuShareRequest& request, const GpuShareSetup& setup);
// Removes the share file (the claim failed, or exec did).
void discard_gpu_share(const GpuShareSetup& setup);

}  // namespace mlos::cli
