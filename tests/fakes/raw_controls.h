/* SPDX-License-Identifier: Apache-2.0 */
// For the tests of text outputs that carry users' text (labels; issue 47,
// finding 9): the control bytes left raw in what was printed.
#pragma once

#include <string>

namespace mlos_test {

// Bytes below 0x20 other than the line end, DEL, and C1 controls as UTF-8
// (0xC2 0x80-0x9F), each as "byte N at I; "; "" when there are none.
inline std::string raw_controls(const std::string& text) {
  std::string found;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool c1 = c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    if ((c < 0x20 && c != '\n') || c == 0x7F || c1) found += "byte " + std::to_string(c) + " at " + std::to_string(i) + "; ";
  }
  return found;
}

}  // namespace mlos_test
