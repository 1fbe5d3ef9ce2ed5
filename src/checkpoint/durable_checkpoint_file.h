/* SPDX-License-Identifier: Apache-2.0 */
// Writes one checkpoint file so that a crash at any moment leaves either no
// new file or the complete new one, never a torn one.
//
// Protocol (os/durable_commit.h, shared with mlosd's state files): create
// "<final>.tmp" in the same directory (O_EXCL, O_NOFOLLOW), write the
// payload and the footer (looping over short writes and EINTR), fdatasync
// it, close it, rename it to its final name, fsync the directory.
//
// Failures are MLOS_ERR_IO with the errno (ENOSPC, EIO, ...), and nothing of
// the failed save stays visible: the temporary is unlinked, and if only the
// directory fsync failed the renamed file is unlinked too, so the newest
// checkpoint is the previous one. A failed fdatasync/fsync is never retried:
// after one the kernel may have dropped the dirty pages and cleared the
// error, so a second call could succeed without the data being on disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mlos::checkpoint {

// `dir_fd` is `dir` opened O_RDONLY|O_DIRECTORY (for its fsync). The caller
// serialises writers of one directory and prefix (CheckpointWriter's lock).
Status write_checkpoint_file(const std::string& dir, int dir_fd, std::string_view prefix, uint64_t sequence,
                             const void* data, size_t size);

// The same protocol for a file other programs read as it is (no footer):
// replaces `path` with exactly `size` bytes. The temporary is
// "<path>.mlos-tmp.<pid>.<n>"; a process killed mid-write may leave one
// behind, never a torn `path`. Errors: NOT_FOUND (no such directory),
// INVALID_ARGUMENT (path ends in '/'), IO (with the errno).
Status write_file_durably(const std::string& path, const void* data, size_t size);

}  // namespace mlos::checkpoint
