/* SPDX-License-Identifier: Apache-2.0 */
// What a checkpoint directory holds for one prefix: its final checkpoints
// (by sequence) and any temporaries a crashed writer left behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mlos::checkpoint {

struct CheckpointEntry {
  uint64_t sequence;
  std::string name;  // file name inside the directory
};

// Final-named checkpoints of `prefix` in `dir`, oldest first. Whether they
// verify is not checked here. Errors: NOT_FOUND (no such directory),
// PERMISSION, SYSTEM.
Result<std::vector<CheckpointEntry>> list_checkpoints(const std::string& dir, std::string_view prefix);

// Names of the temporaries of `prefix` in `dir`. Errors as list_checkpoints.
Result<std::vector<std::string>> list_temp_files(const std::string& dir, std::string_view prefix);

// dir + "/" + name.
std::string path_in(const std::string& dir, const std::string& name);

}  // namespace mlos::checkpoint
