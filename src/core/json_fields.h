// Strict reading of JSON numbers shared by every on-disk and on-wire format.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace mlos {

// True for an integer >= 0. Parsed text holds such numbers as unsigned,
// documents built in C++ may hold them as signed: both count; negatives
// and fractions never do (nlohmann's get<uint64_t>() would wrap -1).
inline bool is_non_negative_integer(const nlohmann::json& v) {
  return v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() >= 0);
}

// j[key] as an unsigned integer; std::invalid_argument naming the key
// otherwise (callers turn it into STATE_CORRUPT).
inline uint64_t non_negative_field(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!is_non_negative_integer(v)) throw std::invalid_argument(std::string(key) + " is not a non-negative integer");
  return v.get<uint64_t>();
}

}  // namespace mlos
