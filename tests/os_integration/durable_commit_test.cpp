// SPDX-License-Identifier: Apache-2.0
// The one durable commit of a file (checkpoints, state files), on the real
// file system: what a failure at each step leaves behind. A directory
// fsync that fails is made real by handing it a descriptor that is not
// open (EBADF).
#include "os/durable_commit.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "os/durable_file.h"
#include "os/unique_fd.h"

namespace mlos::os {
namespace {

class DurableCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mlos-durable-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    dir_fd_ = UniqueFd(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir_fd_.valid());
    final_ = dir_ + "/state.json";
    tmp_ = final_ + ".tmp";
    std::ofstream(final_) << "old";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string text_of(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static std::function<Status(int)> writes(const std::string& text) {
    return [text](int fd) { return write_all(fd, text.data(), text.size(), "write"); };
  }
  std::string dir_, final_, tmp_;
  UniqueFd dir_fd_;
};

TEST_F(DurableCommitTest, ACommitReplacesTheFileAndLeavesNoTemporary) {
  ASSERT_TRUE(commit_file_durably(dir_, dir_fd_.get(), tmp_, final_, writes("new"),
                                  OnDirectorySyncFailure::kKeepNewFile)
                  .ok());
  EXPECT_EQ(text_of(final_), "new");
  EXPECT_FALSE(std::filesystem::exists(tmp_));
}

TEST_F(DurableCommitTest, AFailedFillReturnsItsErrorAndLeavesTheOldFile) {
  auto s = commit_file_durably(
      dir_, dir_fd_.get(), tmp_, final_, [](int) -> Status { return make_error(MLOS_ERR_NO_MEMORY, "fill failed"); },
      OnDirectorySyncFailure::kKeepNewFile);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_NO_MEMORY);
  EXPECT_EQ(text_of(final_), "old");
  EXPECT_FALSE(std::filesystem::exists(tmp_));
}

TEST_F(DurableCommitTest, AnExistingTemporaryIsRefusedNotFollowedOrOverwritten) {
  std::ofstream(tmp_) << "someone else's";
  auto s = commit_file_durably(dir_, dir_fd_.get(), tmp_, final_, writes("new"), OnDirectorySyncFailure::kKeepNewFile);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_IO);
  EXPECT_EQ(text_of(tmp_), "someone else's");
  EXPECT_EQ(text_of(final_), "old");
}

TEST_F(DurableCommitTest, AFailedDirectorySyncUnlinksAFreshNameOrKeepsAReplacement) {
  const std::string fresh = dir_ + "/ckpt-2";
  auto s = commit_file_durably(dir_, /*dir_fd=*/-1, tmp_, fresh, writes("new"), OnDirectorySyncFailure::kUnlinkNewFile);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_IO);
  EXPECT_NE(s.error().message.find("fsync of directory"), std::string::npos) << s.error().describe();
  EXPECT_FALSE(std::filesystem::exists(fresh)) << "nothing of a failed commit stays visible";

  s = commit_file_durably(dir_, /*dir_fd=*/-1, tmp_, final_, writes("new"), OnDirectorySyncFailure::kKeepNewFile);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_IO);
  EXPECT_EQ(text_of(final_), "new") << "the old content is gone once renamed over: the new one stays";
  EXPECT_FALSE(std::filesystem::exists(tmp_));
}

TEST_F(DurableCommitTest, ReplaceRemovesAStaleTemporaryOfItsPidAndRefusesADirectoryItCannotOpen) {
  const std::string stale = final_ + ".tmp." + std::to_string(getpid());
  std::ofstream(stale) << "a dead writer's";
  ASSERT_TRUE(replace_file_durably(dir_, final_, "new").ok());
  EXPECT_EQ(text_of(final_), "new");
  EXPECT_FALSE(std::filesystem::exists(stale));

  // Before, a directory that could not be opened skipped its fsync and
  // reported success.
  auto s = replace_file_durably(dir_ + "/missing", final_, "newer");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_IO);
  EXPECT_EQ(text_of(final_), "new");
}

}  // namespace
}  // namespace mlos::os
