/* SPDX-License-Identifier: Apache-2.0 */
// A JSON document on disk that says what it is and proves it is whole:
//   {"format":"<format>","schema_version":N,"crc32":C,"payload":{...}}
// where C is the CRC-32 (zlib) of the payload's compact serialisation.
// Saved with replace_file_durably, so a crash leaves the old or the new
// document. mlosd keeps its job registry in one.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::os {

class CheckedJsonFile {
 public:
  CheckedJsonFile(std::string dir, std::string name, std::string format, int schema_version);

  std::string path() const { return dir_ + "/" + name_; }
  Status save(const nlohmann::json& payload) const;
  // nullopt when there is no file yet. STATE_CORRUPT, naming the file and
  // what is wrong (not JSON, another format, another schema_version, checksum
  // mismatch), when it cannot be trusted; the file is left untouched.
  Result<std::optional<nlohmann::json>> load() const;

 private:
  std::string dir_, name_, format_;
  int schema_version_;
};

}  // namespace mlos::os
