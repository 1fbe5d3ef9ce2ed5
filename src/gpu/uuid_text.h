/* SPDX-License-Identifier: Apache-2.0 */
// A GPU's 16-byte UUID (CUuuid, cuDeviceGetUuid) as NVML and nvidia-smi
// write it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". Header-only: both
// libmlos and the GPU sharing interposer (which links no libmlos) use it.
#pragma once

#include <cstdio>
#include <string>

namespace mlos::gpu {

inline std::string uuid_text(const void* uuid16) {
  const auto* b = static_cast<const unsigned char*>(uuid16);
  char out[64];
  std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

}  // namespace mlos::gpu
