/* SPDX-License-Identifier: Apache-2.0 */
// Keep-last-N retention. Run only after a save fully succeeded (directory
// fsync included), so that the checkpoints it deletes are never the newest
// durable one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mlos::checkpoint {

// Deletes the checkpoints of `prefix` in `dir` beyond the newest
// `keep_last` (>= 1), oldest first. Returns how many it deleted; a file that
// cannot be deleted is left (and reported). The deletions are not fsync'd: a
// crash may bring an old file back, which retention removes next time.
Result<uint32_t> remove_old_checkpoints(const std::string& dir, std::string_view prefix, uint32_t keep_last);

}  // namespace mlos::checkpoint
