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
// either the old or the new file, never a torn one, by commit_file_durably
// (durable_commit.h): the temporary "<path>.tmp.<pid>" created exclusively,
// never through a link, fdatasynced once, renamed over `path`, the
// directory fsynced once. IO with the errno on any failure, a directory
// that cannot be opened included; if only the directory fsync failed, the
// new file stays. The caller must own `dir` and serialise writers (a
// leftover temporary of a crashed writer with this pid is removed).
Status replace_file_durably(const std::string& dir, const std::string& path, const std::string& data);

}  // namespace mlos::os
