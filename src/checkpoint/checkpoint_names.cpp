// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/checkpoint_names.h"

#include <cstdio>

namespace mlos::checkpoint {

namespace {

constexpr std::string_view kSuffix = ".mlosckpt";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr size_t kSequenceDigits = 20;  // UINT64_MAX has 20 decimal digits

bool is_digits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool valid_prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > kMaxPrefixLength || prefix.front() == '.') return false;
  for (char c : prefix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string final_name(std::string_view prefix, uint64_t sequence) {
  char digits[kSequenceDigits + 1];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(sequence));
  return std::string(prefix) + "-" + digits + std::string(kSuffix);
}

std::string temp_name(std::string_view prefix, uint64_t sequence) {
  return final_name(prefix, sequence) + std::string(kTempSuffix);
}

std::optional<uint64_t> parse_final_name(std::string_view prefix, std::string_view name) {
  if (name.size() != prefix.size() + 1 + kSequenceDigits + kSuffix.size()) return std::nullopt;
  if (name.substr(0, prefix.size()) != prefix || name[prefix.size()] != '-') return std::nullopt;
  if (name.substr(name.size() - kSuffix.size()) != kSuffix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size() + 1, kSequenceDigits);
  if (!is_digits(digits)) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;  // above UINT64_MAX
    v = v * 10 + d;
  }
  return v;
}

bool is_temp_name(std::string_view prefix, std::string_view name) {
  if (name.size() <= kTempSuffix.size() || name.substr(name.size() - kTempSuffix.size()) != kTempSuffix) {
    return false;
  }
  return parse_final_name(prefix, name.substr(0, name.size() - kTempSuffix.size())).has_value();
}

std::string lock_name(std::string_view prefix) { return "." + std::string(prefix) + ".mlosckpt.lock"; }

}  // namespace mlos::checkpoint
