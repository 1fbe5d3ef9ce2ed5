/* SPDX-License-Identifier: Apache-2.0 */
// An append-only file of checksummed JSON lines, each durable before
// append() returns: how mlosd records one change to its registry in O(size
// of the change) instead of rewriting every job. Each line is
//   <crc32 of the JSON, 8 hex digits> <compact JSON>\n
// A crash mid-append leaves at most one torn line, at the end, without its
// newline: read() drops it (its change was never acknowledged) and the next
// append overwrites it. A whole line that fails its checksum is corruption,
// wherever it is.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::os {

class AppendJournal {
 public:
  explicit AppendJournal(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  // Every whole entry in order (none if there is no file). STATE_CORRUPT,
  // naming the line, for a damaged entry; the file is left untouched. Sets
  // the size the next append() continues from (a torn tail is cut off
  // then). append() reads first if nobody has.
  Result<std::vector<nlohmann::json>> read();
  // Appends `entry` and fdatasyncs. Opens (creating, 0600) on first use.
  Status append(const nlohmann::json& entry);
  // Empties the journal durably (after its entries went into a snapshot).
  Status clear();
  // Bytes in the journal now.
  uint64_t size() const { return size_; }

 private:
  Status open_for_append();

  std::string path_;
  UniqueFd fd_;
  uint64_t size_ = 0;       // bytes of whole entries
  bool truncate_to_size_ = false;  // a torn tail was found: cut it before appending
  bool read_ = false;
};

}  // namespace mlos::os
