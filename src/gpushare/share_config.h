/* SPDX-License-Identifier: Apache-2.0 */
// What the interposer is asked to enforce, from the environment `mlos run`
// sets for the job (docs/gpu.md, "Sharing a GPU"):
//   MLOS_GPUSHARE_STATE        the job's share file (share_file.h), which
//                              holds the limits; unset = private books
//   MLOS_GPU_MEMORY_LIMIT      bytes per GPU, when there is no share file
//   MLOS_GPU_SHARE             percent per GPU (1..100), likewise
//   MLOS_GPU_SHARE_MECHANISM   "throttle" (default) or "mps": MPS enforces
//                              the share, so launches are not throttled
// Pure: the values come in as strings (nullptr = unset).
#pragma once

#include <string>

#include "gpushare/share_file.h"

namespace mlos::gpushare {

struct ShareConfig {
  std::string state_path;  // "" = private books holding `limits`
  ShareLimits limits;
  bool throttle_launches = true;  // false under MPS
};

// Parses the four variables; `*why` says what is wrong with a bad value
// (then the interposer refuses allocations rather than run uncapped).
bool parse_share_config(const char* state, const char* memory_limit, const char* share, const char* mechanism,
                        ShareConfig* out, std::string* why);

}  // namespace mlos::gpushare
