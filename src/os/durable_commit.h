/* SPDX-License-Identifier: Apache-2.0 */
// The one way mlOS makes a file durable: checkpoints, mlosd's and the
// ledger's state files, a user's file replaced in place. A crash at any
// moment leaves the old file or the complete new one, never a torn one.
//
// Protocol: create `tmp` in the directory (O_EXCL, O_NOFOLLOW, 0644), let
// `fill` write it, fdatasync it once, close it (a deferred write error
// counts), rename it over `final_path`, fsync the directory once. A failed
// fdatasync/fsync is never retried: after one the kernel may have dropped
// the dirty pages and cleared the error, so a second call could succeed
// without the data being on disk.
//
// Failures are MLOS_ERR_IO with the errno (ENOSPC, EIO, ...), or what
// `fill` returned. Before the rename, `tmp` is unlinked and `final_path`
// is as it was. When only the directory fsync fails, the rename may or may
// not reach the disk: `on_directory_sync_failure` says whether the renamed
// file is unlinked (a fresh name, e.g. a new checkpoint: readers then see
// what the failure says, the previous checkpoint) or kept (a state file
// replaced in place: its old content is gone once the rename is made, and
// the new one is the best there is); the error is returned either way.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"

namespace mlos::os {

enum class OnDirectorySyncFailure { kUnlinkNewFile, kKeepNewFile };

// `dir_fd` is `dir` opened O_RDONLY|O_DIRECTORY; `tmp` and `final_path`
// are in it. The caller serialises writers of `tmp`.
Status commit_file_durably(const std::string& dir, int dir_fd, const std::string& tmp, const std::string& final_path,
                           const std::function<Status(int fd)>& fill, OnDirectorySyncFailure on_directory_sync_failure);

// Writes all of [data, data + size) to `fd` (short writes and EINTR
// looped over); IO naming `what` on failure.
Status write_all(int fd, const void* data, size_t size, const std::string& what);

}  // namespace mlos::os
