// SPDX-License-Identifier: Apache-2.0
// open_file_list: "path<TAB>label" lines, relative to the list's directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include "dataload/sample_source.h"
#include "dataload/temp_dir.h"

namespace mlos::dataload {
namespace {

using testing::TempDir;
using testing::write_file;

std::string as_string(std::span<const uint8_t> bytes) { return {bytes.begin(), bytes.end()}; }

TEST(FileListSource, ReadsPathsAndLabelsSkippingCommentsAndBlanks) {
  TempDir tmp;
  write_file(tmp / "data/a.jpg", "A");
  write_file(tmp / "data/sub/b c.png", "BB");
  write_file(tmp / "elsewhere/d.jpg", "DDD");
  write_file(tmp / "data/tab\tname.jpg", "T");
  write_file(tmp / "data/list.txt",
             "# a comment\n"
             "a.jpg\t3\n"
             "\n"
             "   \n"
             "sub/b c.png\t0\r\n" +
                 (tmp / "elsewhere/d.jpg") + "\t12\n"
                 "tab\tname.jpg\t7");  // the last TAB splits; no final newline
  auto source = open_file_list(tmp / "data/list.txt");
  ASSERT_TRUE(source.ok()) << source.error().message;
  const auto& s = **source;
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.describe(0), tmp / "data/a.jpg");
  EXPECT_EQ(s.describe(1), tmp / "data/sub/b c.png");
  EXPECT_EQ(s.describe(2), tmp / "elsewhere/d.jpg");
  EXPECT_EQ(s.describe(3), tmp / "data/tab\tname.jpg");
  EXPECT_EQ(s.label(0), 3);
  EXPECT_EQ(s.label(1), 0);
  EXPECT_EQ(s.label(2), 12);
  EXPECT_EQ(s.label(3), 7);
  EXPECT_TRUE(s.class_names().empty());
  ScratchBuffer buffer;
  const char* expected[] = {"A", "BB", "DDD", "T"};
  for (size_t i = 0; i < s.size(); ++i) {
    auto bytes = s.read(i, buffer);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    EXPECT_EQ(as_string(*bytes), expected[i]);
  }
}

TEST(FileListSource, ListInTheWorkingDirectoryResolvesRelativeToIt) {
  TempDir tmp;
  write_file(tmp / "x.jpg", "X");
  write_file(tmp / "list.tsv", "x.jpg\t1\n");
  char old[4096];
  ASSERT_NE(::getcwd(old, sizeof old), nullptr);
  ASSERT_EQ(::chdir(tmp.path().c_str()), 0);
  auto source = open_file_list("list.tsv");
  ASSERT_EQ(::chdir(old), 0);
  ASSERT_TRUE(source.ok()) << source.error().message;
  EXPECT_EQ((*source)->describe(0), "x.jpg");
}

TEST(FileListSource, MalformedLinesAreNamedByNumber) {
  TempDir tmp;
  const std::pair<const char*, const char*> cases[] = {
      {"a.jpg\t1\nb.jpg 2\n", ":2: no TAB"},
      {"# c\n\na.jpg\t-1\n", ":3: bad label \"-1\""},
      {"a.jpg\tx\n", ":1: bad label \"x\""},
      {"a.jpg\t1x\n", ":1: bad label"},
      {"a.jpg\t\n", ":1: bad label \"\""},
      {"a.jpg\t+1\n", ":1: bad label"},
      {"a.jpg\t 1\n", ":1: bad label"},
      {"a.jpg\t99999999999999999999\n", ":1: bad label"},
      {"\t1\n", ":1: empty path"},
  };
  for (const auto& [text, message] : cases) {
    write_file(tmp / "list.txt", text);
    auto source = open_file_list(tmp / "list.txt");
    ASSERT_FALSE(source.ok()) << text;
    EXPECT_EQ(source.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(source.error().message.find(tmp / "list.txt"), std::string::npos);
    EXPECT_NE(source.error().message.find(message), std::string::npos) << source.error().message;
  }
}

TEST(FileListSource, EmptyOrMissingListsAreErrors) {
  TempDir tmp;
  write_file(tmp / "list.txt", "# nothing here\n\n");
  auto empty = open_file_list(tmp / "list.txt");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(empty.error().message.find("no samples"), std::string::npos);
  auto missing = open_file_list(tmp / "absent.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
}

TEST(FileListSource, MissingSampleFailsOnlyItsRead) {
  TempDir tmp;
  write_file(tmp / "a.jpg", "A");
  write_file(tmp / "list.txt", "a.jpg\t0\nmissing.jpg\t1\nsubdir\t2\n");
  ASSERT_EQ(::mkdir((tmp / "subdir").c_str(), 0755), 0);
  auto source = open_file_list(tmp / "list.txt");
  ASSERT_TRUE(source.ok());
  ScratchBuffer buffer;
  EXPECT_TRUE((*source)->read(0, buffer).ok());
  auto missing = (*source)->read(1, buffer);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, MLOS_ERR_IO);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  EXPECT_NE(missing.error().message.find(tmp / "missing.jpg"), std::string::npos);
  auto dir = (*source)->read(2, buffer);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace mlos::dataload
