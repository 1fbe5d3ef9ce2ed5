// SPDX-License-Identifier: Apache-2.0
#include "os/checked_json_file.h"

#include <zlib.h>

#include "core/json_fields.h"
#include "os/durable_file.h"

namespace mlos::os {

namespace {

uint32_t crc_of(const std::string& text) {
  return static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

}  // namespace

CheckedJsonFile::CheckedJsonFile(std::string dir, std::string name, std::string format, int schema_version)
    : dir_(std::move(dir)), name_(std::move(name)), format_(std::move(format)), schema_version_(schema_version) {}

Status CheckedJsonFile::save(const nlohmann::json& payload) const {
  nlohmann::json doc{{"format", format_},
                     {"schema_version", schema_version_},
                     {"crc32", crc_of(payload.dump())},
                     {"payload", payload}};
  return replace_file_durably(dir_, path(), doc.dump(1) + "\n");
}

Result<std::optional<nlohmann::json>> CheckedJsonFile::load() const {
  auto text = read_whole_file(path());
  if (!text) return text.error();
  if (!text->has_value()) return std::optional<nlohmann::json>();
  auto corrupt = [&](const std::string& why) {
    return make_error(MLOS_ERR_STATE_CORRUPT, path() + " " + why + "; it was left untouched");
  };
  nlohmann::json doc = nlohmann::json::parse(**text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return corrupt("is not valid JSON (torn or edited?)");
  if (!doc.is_object()) return corrupt("is not a JSON object");
  // Every field is type-checked before it is read: nlohmann's value() and
  // get() throw on a mismatch, and nothing may throw out of here.
  const auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() || format->get<std::string>() != format_) {
    return corrupt("is not a " + format_ + " file");
  }
  const auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int64_t>() != schema_version_) {
    return corrupt("has schema_version " + (version == doc.end() ? std::string("(none)") : version->dump()) +
                   ", this program reads " + std::to_string(schema_version_));
  }
  const auto crc = doc.find("crc32");
  const auto payload = doc.find("payload");
  if (crc == doc.end() || !is_non_negative_integer(*crc) || payload == doc.end()) {
    return corrupt("lacks its crc32 or payload");
  }
  const uint32_t actual = crc_of(payload->dump());
  if (crc->get<uint64_t>() != actual) {
    return corrupt("fails its checksum (recorded " + crc->dump() + ", computed " + std::to_string(actual) + ")");
  }
  return std::optional<nlohmann::json>(*payload);
}

}  // namespace mlos::os
