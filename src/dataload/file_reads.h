/* SPDX-License-Identifier: Apache-2.0 */
// The file-system calls the sample sources make, in one place: whole-file
// reads with a size bound, exact positional reads, read-ahead advice and
// directory listing. Every failure is an Error naming the path, with errno.
//
// Reads are plain POSIX calls on caller-owned descriptors or on a
// descriptor opened and closed within the call, so each function is safe
// to call from many threads at once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "dataload/scratch_buffer.h"
#include "os/unique_fd.h"

namespace mlos::dataload {

struct OpenedFile {
  os::UniqueFd fd;
  uint64_t size = 0;  // at open
};
// `path` opened read-only, with its size. MLOS_ERR_IO (with errno) when it
// cannot be opened or stat'ed; MLOS_ERR_INVALID_ARGUMENT when it is not a
// regular file or is larger than max_bytes.
Result<OpenedFile> open_regular_file(const std::string& path, size_t max_bytes);

// The whole file at `path` in `buffer` (grown as needed); the span points
// into it. MLOS_ERR_IO (with errno) when it cannot be opened or read, or
// when it shrinks while being read; MLOS_ERR_INVALID_ARGUMENT when it is
// not a regular file or is larger than max_bytes (nothing is allocated).
Result<std::span<const uint8_t>> read_whole_file(const std::string& path, size_t max_bytes,
                                                 ScratchBuffer& buffer);

// Exactly out.size() bytes at `offset` of `fd`, retrying short reads and
// EINTR. MLOS_ERR_IO naming `what` when the file ends first (errno 0) or
// pread fails (its errno).
Status pread_exact(int fd, uint64_t offset, std::span<uint8_t> out, const std::string& what);

// posix_fadvise(POSIX_FADV_WILLNEED) on a byte range: the kernel starts
// reading it into the page cache. Advice only: failures are ignored.
void advise_will_need(int fd, uint64_t offset, uint64_t length);
// The same for a whole file by path (opened and closed again; the pages it
// starts reading stay cached).
void advise_will_need(const std::string& path);

struct DirectoryEntry {
  std::string name;
  // As Python's DirEntry.is_dir(): follows symlinks; false for a broken
  // link or anything whose stat fails.
  bool is_dir = false;
  dev_t dev = 0;  // of the (followed) directory, for loop detection
  ino_t ino = 0;
};

// The entries of directory `path` except "." and "..", in readdir order.
// MLOS_ERR_NOT_FOUND when it does not exist, MLOS_ERR_IO otherwise.
Result<std::vector<DirectoryEntry>> list_directory(const std::string& path);

}  // namespace mlos::dataload
