// SPDX-License-Identifier: Apache-2.0
// expand_shard_pattern: WebDataset brace ranges and lists, globs.
#include <gtest/gtest.h>

#include "dataload/sample_source.h"
#include "dataload/temp_dir.h"

namespace mlos::dataload {
namespace {

using testing::TempDir;
using testing::write_file;

std::vector<std::string> under(const TempDir& tmp, std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* n : names) out.push_back(tmp / n);
  return out;
}

TEST(ShardPattern, BraceRangesKeepZeroPaddingAndListsMultiply) {
  TempDir tmp;
  for (const char* name : {"shard-000008.tar", "shard-000009.tar", "shard-000010.tar", "s-7.tar", "s-8.tar", "s-9.tar",
                           "s-10.tar", "a-1.tar", "a-2.tar", "b-1.tar", "b-2.tar", "x-09.tar", "x-10.tar"}) {
    write_file(tmp / name, "");
  }
  auto padded = expand_shard_pattern(tmp / "shard-{000008..000010}.tar");
  ASSERT_TRUE(padded.ok()) << padded.error().message;
  EXPECT_EQ(*padded, under(tmp, {"shard-000008.tar", "shard-000009.tar", "shard-000010.tar"}));
  // No leading zero: no padding; the result is sorted (byte order), so 10 comes first.
  auto plain = expand_shard_pattern(tmp / "s-{10..7}.tar");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(*plain, under(tmp, {"s-10.tar", "s-7.tar", "s-8.tar", "s-9.tar"}));
  // braceexpand pads to the wider bound when either bound starts with 0.
  auto one_padded = expand_shard_pattern(tmp / "x-{09..10}.tar");
  ASSERT_TRUE(one_padded.ok());
  EXPECT_EQ(*one_padded, under(tmp, {"x-09.tar", "x-10.tar"}));
  auto product = expand_shard_pattern(tmp / "{b,a}-{1..2}.tar");
  ASSERT_TRUE(product.ok()) << product.error().message;
  EXPECT_EQ(*product, under(tmp, {"a-1.tar", "a-2.tar", "b-1.tar", "b-2.tar"}));
  auto duplicates = expand_shard_pattern(tmp / "{a,a}-{1..1}.tar");
  ASSERT_TRUE(duplicates.ok());
  EXPECT_EQ(*duplicates, under(tmp, {"a-1.tar"}));
}

TEST(ShardPattern, MissingExpandedShardsAreNotFound) {
  TempDir tmp;
  write_file(tmp / "s-0.tar", "");
  auto r = expand_shard_pattern(tmp / "s-{0..3}.tar");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(r.error().message.find("3 of 4 shards do not exist, the first " + tmp / "s-1.tar"), std::string::npos)
      << r.error().message;
}

TEST(ShardPattern, MalformedBracesAreRefused) {
  for (const char* pattern : {"s-{0..3.tar", "s-0..3}.tar", "s-{{0..3}}.tar", "s-{a..c}.tar", "s-{0..10..2}.tar",
                              "s-{-1..2}.tar", "s-{one}.tar", "s-{0..99999999999999999999}.tar",
                              "{0..999}{0..999}{0..9}.tar"}) {
    auto r = expand_shard_pattern(pattern);
    ASSERT_FALSE(r.ok()) << pattern;
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT) << pattern << ": " << r.error().message;
    EXPECT_NE(r.error().message.find(pattern), std::string::npos);
  }
}

TEST(ShardPattern, GlobsAreSortedAndNoMatchIsNotFound) {
  TempDir tmp;
  for (const char* name : {"b.tar", "a.tar", "c.txt", "B.tar", "sub/d.tar"}) write_file(tmp / name, "");
  auto r = expand_shard_pattern(tmp / "*.tar");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, under(tmp, {"B.tar", "a.tar", "b.tar"}));
  auto nested = expand_shard_pattern(tmp / "*/?.tar");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(*nested, under(tmp, {"sub/d.tar"}));
  auto none = expand_shard_pattern(tmp / "*.tgz");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, MLOS_ERR_NOT_FOUND);
  auto missing_dir = expand_shard_pattern(tmp / "nodir/*.tar");
  ASSERT_FALSE(missing_dir.ok());
  EXPECT_EQ(missing_dir.error().code, MLOS_ERR_NOT_FOUND) << missing_dir.error().message;
  // A plain path is a glob without magic: it matches itself if it exists.
  auto plain = expand_shard_pattern(tmp / "a.tar");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, under(tmp, {"a.tar"}));
}

}  // namespace
}  // namespace mlos::dataload
