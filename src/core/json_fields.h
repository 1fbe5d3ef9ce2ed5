/* SPDX-License-Identifier: Apache-2.0 */
// Strict reading of JSON numbers shared by every on-disk and on-wire format.
#pragma once

#include <climits>
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

// v as an int in lo..hi; std::invalid_argument "<name> must be an integer
// in lo..hi" for anything else (a fraction, a bool, a string, or a number
// out of range, including unsigned ones past INT64_MAX, which get<int64_t>
// would wrap to negatives).
inline int int_in_range(const nlohmann::json& v, const std::string& name, int lo, int hi) {
  bool fits = false;
  int64_t value = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    fits = hi >= 0 && u <= static_cast<uint64_t>(hi);
    value = static_cast<int64_t>(fits ? u : 0);
    fits = fits && value >= lo;
  } else if (v.is_number_integer()) {
    value = v.get<int64_t>();
    fits = value >= lo && value <= hi;
  }
  if (!fits) {
    throw std::invalid_argument(name + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<int>(value);
}

// a[key] as an int, `fallback` when absent; std::invalid_argument naming
// the key for anything else: no fraction, bool or out-of-range value is
// converted.
inline int optional_int_field(const nlohmann::json& a, const char* key, int fallback) {
  const auto it = a.find(key);
  return it == a.end() ? fallback : int_in_range(*it, key, INT_MIN, INT_MAX);
}

// a[key] as a bool, false when absent; std::invalid_argument naming the
// key for anything but true or false.
inline bool optional_bool_field(const nlohmann::json& a, const char* key) {
  const auto it = a.find(key);
  if (it == a.end()) return false;
  if (!it->is_boolean()) throw std::invalid_argument(std::string(key) + " must be true or false, got " + it->dump());
  return it->get<bool>();
}

}  // namespace mlos
