// SPDX-License-Identifier: Apache-2.0
#include "core/control_escape.h"

#include <gtest/gtest.h>

#include <string>

namespace mlos {
namespace {

TEST(ControlEscapeTest, PrintableTextIsKeptAsIs) {
  for (const std::string& text : {std::string(), std::string("resnet50 run 3 (lr=0.1)"), std::string("a\\nb"),
                                 std::string("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
                                 std::string("\xC2\xA0nbsp")}) {  // U+00A0: after the C1 range
    EXPECT_EQ(escape_controls(text), text);
  }
}

TEST(ControlEscapeTest, TheFindingsLabelsLoseEveryControlCharacter) {
  EXPECT_EQ(escape_controls("train\nmlosd: error: forged"), "train\\nmlosd: error: forged");
  EXPECT_EQ(escape_controls("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(escape_controls("\x1b]52;c;cm0gLXJmIH4=\x07"), "\\x1b]52;c;cm0gLXJmIH4=\\x07");
  EXPECT_EQ(escape_controls("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
}

TEST(ControlEscapeTest, EachC0ControlAndDelHasAnEscape) {
  EXPECT_EQ(escape_controls("\r\t"), "\\r\\t");
  EXPECT_EQ(escape_controls(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_controls("\x01\x1f\x7f"), "\\x01\\x1f\\x7f");
  for (int c = 0; c < 0x20; ++c) {
    const std::string out = escape_controls(std::string(1, static_cast<char>(c)));
    ASSERT_GE(out.size(), 2u) << c;
    EXPECT_EQ(out[0], '\\') << c;
    for (char o : out) EXPECT_GE(static_cast<unsigned char>(o), 0x20) << c;
  }
}

TEST(ControlEscapeTest, C1ControlsAndIllFormedBytesAreEscaped) {
  EXPECT_EQ(escape_controls("\xC2\x9B" "31m"), "\\u009b31m");  // U+009B CSI
  EXPECT_EQ(escape_controls("\xC2\x80\xC2\x9F"), "\\u0080\\u009f");
  EXPECT_EQ(escape_controls("\x9B" "31m"), "\\x9b31m");  // a lone CSI byte: not UTF-8
  EXPECT_EQ(escape_controls("ok\xC3"), "ok\\xc3");       // a cut sequence
  EXPECT_EQ(escape_controls("\xE2\x82"), "\\xe2\\x82");
}

}  // namespace
}  // namespace mlos
