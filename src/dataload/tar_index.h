/* SPDX-License-Identifier: Apache-2.0 */
// An index of the regular files in an uncompressed tar archive: name, data
// offset and size of each, from one sequential pass over the 512-byte
// headers, so a member can later be read with a single pread.
//
// Understood: POSIX ustar (name with the 155-byte prefix), GNU (long names
// in 'L' members, base-256 sizes) and pax ('x' headers: path= and size=
// records), which are what Python's tarfile, GNU tar and bsdtar write.
// Regular files are types '0', '\0' (a name ending in '/' is an old-style
// directory) and '7'; every other type (directories, links, devices, 'g'
// global headers, GNU 'K' long link names, sparse 'S') is skipped over by
// its size. Each header's checksum is verified (unsigned or signed byte
// sum, as tarfile accepts). The archive ends at the first all-zero block
// (GNU tar and tarfile stop there too; the second zero block and the
// record padding are not required) or exactly at end of file between
// members. Pax sparse files (GNU.sparse.* records) are refused: their data
// is not the file's bytes.
//
// Why not libarchive: it is a streaming reader. archive_read_next_header()
// gives a member's metadata and archive_read_data() its bytes in stream
// order; the one position it documents, archive_read_header_position(), is
// the offset where the member's header run starts (before any pax or GNU
// long-name blocks, recorded before the format parses them), not where its
// data starts. The data offset could be inferred from
// archive_filter_bytes(a, 0) just after reading a header, but that relies
// on how much the tar reader has consumed at that moment, which libarchive
// does not promise. An index needs only header arithmetic: bounded, about
// two hundred lines, fully testable in memory, and with no new dependency.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace mlos::dataload {

struct TarMember {
  std::string name;
  uint64_t header_offset = 0;  // where its first header block starts (a pax or 'L' block, if any)
  uint64_t data_offset = 0;
  uint64_t size = 0;
};

// Reads exactly out.size() bytes at `offset`; index_tar only asks for
// ranges inside [0, archive_size).
using TarReader = std::function<Status(uint64_t offset, std::span<uint8_t> out)>;

// The archive's regular files in archive order. A malformed or truncated
// archive is MLOS_ERR_INVALID_ARGUMENT with a message "<archive_name>:
// <what> at byte offset <n>"; errors from `read` are returned as they are.
// Memory is bounded by the archive: at most one member per 512 bytes, and
// extended headers over 1 MiB are refused.
Result<std::vector<TarMember>> index_tar(const TarReader& read, uint64_t archive_size,
                                         const std::string& archive_name);

}  // namespace mlos::dataload
