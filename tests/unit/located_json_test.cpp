// SPDX-License-Identifier: Apache-2.0
// parse_located_json: comments, key positions by JSON pointer, and syntax
// errors as line:column.
#include "core/located_json.h"

#include <gtest/gtest.h>

namespace mlos {
namespace {

TEST(LocatedJsonTest, KeysAreLocatedByPointer) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": {\"c\": [1, {\"d\": true}]},\n\t\"e/f\": null\n}";
  auto doc = parse_located_json(text);
  ASSERT_TRUE(doc.ok()) << doc.error().describe();
  EXPECT_EQ(doc->value["b"]["c"][1]["d"], true);
  EXPECT_EQ(doc->where("/a"), "2:3");
  EXPECT_EQ(doc->where("/b"), "3:3");
  EXPECT_EQ(doc->where("/b/c"), "3:9");
  EXPECT_EQ(doc->where("/e~1f"), "4:2");  // '/' in a key is escaped (RFC 6901)
  // Inside an array, and unknown pointers: the nearest enclosing key.
  EXPECT_EQ(doc->where("/b/c/1/d"), "3:9");
  EXPECT_EQ(doc->where("/b/zz"), "3:3");
  EXPECT_EQ(doc->where("/nope"), "");
}

TEST(LocatedJsonTest, KeysWithEscapedQuotesAreLocatedAtTheirStart) {
  auto doc = parse_located_json(R"({"x\"y": 1, "z": 2})");
  ASSERT_TRUE(doc.ok()) << doc.error().describe();
  EXPECT_EQ(doc->where("/x\"y"), "1:2");
  EXPECT_EQ(doc->where("/z"), "1:13");
}

TEST(LocatedJsonTest, CommentsAreSkippedAndCounted) {
  auto doc = parse_located_json("// head\n/* a\n b */ {\"k\": /* v */ 3} // tail\n");
  ASSERT_TRUE(doc.ok()) << doc.error().describe();
  EXPECT_EQ(doc->value["k"], 3);
  EXPECT_EQ(doc->where("/k"), "3:8");
}

TEST(LocatedJsonTest, SyntaxErrorsSayLineAndColumn) {
  auto doc = parse_located_json("{\n  \"a\": 1\n  \"b\": 2\n}");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(doc.error().message.rfind("3:3: ", 0), 0u) << doc.error().message;
  EXPECT_EQ(doc.error().message.find("json.exception"), std::string::npos) << doc.error().message;
}

TEST(LocatedJsonTest, AStructuralCharacterOutOfPlaceIsPointedAt) {
  // After "x" and a comma the lexer's token text is "\"x\",}": the
  // position is still the brace's.
  auto doc = parse_located_json("{\"a\": \"x\",}");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message.rfind("1:11: ", 0), 0u) << doc.error().message;
  doc = parse_located_json("[1, 2]]");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message.rfind("1:7: ", 0), 0u) << doc.error().message;
}

TEST(LocatedJsonTest, TruncatedAndEmptyTextAreErrors) {
  EXPECT_FALSE(parse_located_json("").ok());
  EXPECT_FALSE(parse_located_json("{\"a\": ").ok());
  EXPECT_FALSE(parse_located_json("{} {}").ok());  // one document only
}

TEST(LocatedJsonTest, PositionOfCountsLinesAndBytes) {
  const TextPosition p = position_of("ab\ncd\ne", 4);
  EXPECT_EQ(p.line, 2u);
  EXPECT_EQ(p.column, 2u);
  EXPECT_EQ(position_of("", 10).line, 1u);
}

}  // namespace
}  // namespace mlos
