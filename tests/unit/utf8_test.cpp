// SPDX-License-Identifier: Apache-2.0
#include "core/utf8.h"

#include <gtest/gtest.h>

namespace mlos {
namespace {

TEST(Utf8Test, ValidTextIsKeptAsIs) {
  for (const std::string text : {std::string(), std::string("plain"), std::string("\xC3\xA9t\xC3\xA9"),
                                 std::string("\xE2\x82\xAC"), std::string("\xF0\x9F\x98\x80"),
                                 std::string("nul\0inside", 10)}) {
    EXPECT_EQ(first_invalid_utf8(text), std::string_view::npos) << text;
    EXPECT_EQ(valid_utf8(text), text);
  }
}

TEST(Utf8Test, IllFormedSequencesAreFoundAndReplaced) {
  struct Case {
    std::string text;
    size_t first_bad;
    std::string replaced;
  };
  const std::string fffd = "\xEF\xBF\xBD";
  const Case cases[] = {
      {"\xff", 0, fffd},
      {"ab\xff", 2, "ab" + fffd},
      {"\xC3", 0, fffd},                         // truncated 2-byte sequence
      {"\xC0\xAF", 0, fffd + fffd},              // overlong '/'
      {"\xE0\x80\xAF", 0, fffd + fffd + fffd},   // overlong 3-byte
      {"\xED\xA0\x80", 0, fffd + fffd + fffd},   // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", 0, fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"x\xC3\xA9\x80y", 3, "x\xC3\xA9" + fffd + "y"},     // stray continuation byte
  };
  for (const auto& c : cases) {
    EXPECT_EQ(first_invalid_utf8(c.text), c.first_bad) << c.replaced;
    const std::string out = valid_utf8(c.text);
    EXPECT_EQ(out, c.replaced);
    EXPECT_EQ(first_invalid_utf8(out), std::string_view::npos);
  }
}

}  // namespace
}  // namespace mlos
