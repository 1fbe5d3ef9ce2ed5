/* SPDX-License-Identifier: Apache-2.0 */
// Reading and verifying checkpoint files. A file is accepted only when its
// footer decodes (magic, footer checksum, version, flags), its length matches
// the footer, and the XXH3-64 of its payload, streamed as it is read,
// matches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint_format.h"
#include "core/status.h"

namespace mlos::checkpoint {

// Verifies the file at `path` without keeping its payload. Never blocks on
// a FIFO or device: it is opened non-blocking and refused. Errors:
// CHECKPOINT_CORRUPT (not a regular file, short file or a failed check; the
// message says which), NOT_FOUND, PERMISSION, IO (a read error), SYSTEM.
Result<Footer> verify_checkpoint_file(const std::string& path);

// A payload in memory from malloc (free it with free()).
struct LoadedCheckpoint {
  void* data = nullptr;
  size_t size = 0;
  uint64_t sequence = 0;
  uint32_t damaged_skipped = 0;  // newer files that failed verification
};

// Reads and verifies the file at `path`; the payload is malloc'd. When
// `expected_sequence` is set, a footer with another sequence is corrupt (a
// file renamed by hand). Errors: those of verify_checkpoint_file, NO_MEMORY.
Result<LoadedCheckpoint> load_checkpoint_file(const std::string& path,
                                              std::optional<uint64_t> expected_sequence = std::nullopt);

// The newest checkpoint of `prefix` in `dir` that verifies; newer ones that
// do not (not regular files included) are skipped and counted. Errors:
// NOT_FOUND (no directory, or no checkpoint of that prefix),
// CHECKPOINT_CORRUPT (none verifies; the message names the newest and why),
// PERMISSION, SYSTEM, NO_MEMORY.
Result<LoadedCheckpoint> load_latest_checkpoint(const std::string& dir, std::string_view prefix);

}  // namespace mlos::checkpoint
