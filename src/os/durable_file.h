/* SPDX-License-Identifier: Apache-2.0 */
// Reading and durably replacing small state files: the building blocks of
// the claim ledger and of mlosd's registry. Neither follows a symbolic link.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"

namespace mlos::os {

// The whole file, or nullopt if it does not exist.
Result<std::optional<std::string>> read_whole_file(const std::string& path);

// Replaces `path` (in directory `dir`) with `data` so that a crash leaves
// either the old or the new file, never a torn one: write a temporary file
// (created exclusively, never through a link), fsync it, rename it over
// `path`, fsync the directory. The caller must own `dir` and serialise
// writers (a leftover temporary of a crashed writer is removed).
Status replace_file_durably(const std::string& dir, const std::string& path, const std::string& data);

}  // namespace mlos::os
