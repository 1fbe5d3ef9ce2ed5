// SPDX-License-Identifier: Apache-2.0
#include "core/control_escape.h"

#include "core/utf8.h"

namespace mlos {

namespace {

void append_escape(std::string& out, const char* prefix, unsigned char value) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  out += kHex[value >> 4];
  out += kHex[value & 0xF];
}

}  // namespace

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t n = utf8_sequence_length(text, at);
    const auto b0 = static_cast<unsigned char>(text[at]);
    if (n == 0) {
      append_escape(out, "\\x", b0);
      ++at;
      continue;
    }
    if (n == 1) {
      if (b0 == '\n') out += "\\n";
      else if (b0 == '\r') out += "\\r";
      else if (b0 == '\t') out += "\\t";
      else if (b0 < 0x20 || b0 == 0x7F) append_escape(out, "\\x", b0);
      else out += static_cast<char>(b0);
    } else if (n == 2 && b0 == 0xC2 && static_cast<unsigned char>(text[at + 1]) <= 0x9F) {
      append_escape(out, "\\u00", static_cast<unsigned char>(text[at + 1]));  // U+0080-U+009F
    } else {
      out.append(text, at, n);
    }
    at += n;
  }
  return out;
}

}  // namespace mlos
