// SPDX-License-Identifier: Apache-2.0
#include "core/utf8.h"

namespace mlos {

// The table of well-formed sequences in Unicode 15, section 3.9, D92.
size_t utf8_sequence_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return at + i < text.size() ? static_cast<unsigned char>(text[at + i]) : 0x100u; };
  auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (in(b0, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
  if (in(b0, 0xE0, 0xEF)) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(b0, 0xF0, 0xF4)) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;  // no overlongs, <= U+10FFFF
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

size_t first_invalid_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t n = utf8_sequence_length(text, at);
    if (n == 0) return at;
    at += n;
  }
  return std::string_view::npos;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t n = utf8_sequence_length(text, at);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for the one byte that cannot start a sequence here
      ++at;
    } else {
      out.append(text, at, n);
      at += n;
    }
  }
  return out;
}

}  // namespace mlos
