// SPDX-License-Identifier: Apache-2.0
#include "gpushare/share_config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mlos::gpushare {

namespace {

// A plain decimal number that fits in 64 bits.
bool parse_u64(const char* text, unsigned long long* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(text, &end, 10);
  return errno == 0 && *end == '\0';
}

}  // namespace

bool parse_share_config(const char* state, const char* memory_limit, const char* share, const char* mechanism,
                        ShareConfig* out, std::string* why) {
  *out = ShareConfig{};
  if (state != nullptr && *state != '\0') out->state_path = state;
  if (memory_limit != nullptr && *memory_limit != '\0') {
    unsigned long long v = 0;
    if (!parse_u64(memory_limit, &v)) {
      *why = std::string("MLOS_GPU_MEMORY_LIMIT must be a number of bytes, got \"") + memory_limit + "\"";
      return false;
    }
    out->limits.memory_limit = v;
  }
  if (share != nullptr && *share != '\0') {
    unsigned long long v = 0;
    if (!parse_u64(share, &v) || v < 1 || v > 100) {
      *why = std::string("MLOS_GPU_SHARE must be a percentage from 1 to 100, got \"") + share + "\"";
      return false;
    }
    out->limits.share_percent = static_cast<int>(v);
  }
  if (mechanism != nullptr && *mechanism != '\0') {
    if (std::strcmp(mechanism, "mps") == 0) {
      out->throttle_launches = false;
    } else if (std::strcmp(mechanism, "throttle") != 0) {
      *why = std::string("MLOS_GPU_SHARE_MECHANISM must be \"throttle\" or \"mps\", got \"") + mechanism + "\"";
      return false;
    }
  }
  return true;
}

}  // namespace mlos::gpushare
