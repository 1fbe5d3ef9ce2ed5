// SPDX-License-Identifier: Apache-2.0
// A directory of this user's own (src/os/own_directory.h), the check the
// claim ledger and mlos run's GPU share files make of the runtime
// directory: one another user made first (/tmp/mlos-<uid> is anyone's to
// create), one others may write to, or a link to elsewhere is refused,
// naming the path and the reason; this user's own passes.
#include "os/own_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

namespace mlos::os {
namespace {

constexpr uid_t kOtherUid = 65534;  // nobody: the user who planted the directory

class OwnDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/own-dir-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(OwnDirectoryTest, ThisUsersOwnDirectoryPasses) {
  const std::string dir = root_ + "/mlos-1000/gpushare";
  ASSERT_TRUE(make_own_directory(dir, 0700, "GPU share directory"));
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(check_own_directory(dir, "GPU share directory"));
  EXPECT_TRUE(make_own_directory(dir, 0700, "GPU share directory")) << "one that exists already passes too";
}

TEST_F(OwnDirectoryTest, ADirectoryOthersMayWriteToIsRefused) {
  const std::string dir = root_ + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  const Status s = check_own_directory(dir, "runtime directory");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_PERMISSION);
  EXPECT_EQ(s.error().message,
            "runtime directory " + dir + " is writable by group or others; refusing to use it (chmod go-w)");
  ASSERT_EQ(chmod(dir.c_str(), 0720), 0);
  EXPECT_FALSE(make_own_directory(dir, 0700, "runtime directory")) << "group-writable";
}

TEST_F(OwnDirectoryTest, ALinkIsRefusedEvenToAGoodDirectory) {
  // The link's owner could point it elsewhere between the check and a use.
  const std::string good = root_ + "/good";
  const std::string link = root_ + "/link";
  ASSERT_EQ(mkdir(good.c_str(), 0700), 0);
  ASSERT_EQ(symlink(good.c_str(), link.c_str()), 0);
  const Status s = make_own_directory(link, 0700, "runtime directory");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_PERMISSION);
  EXPECT_EQ(s.error().message,
            "runtime directory " + link + " is a symbolic link; refusing to use it (name the directory itself)");
}

TEST_F(OwnDirectoryTest, AFileIsNotADirectory) {
  const std::string file = root_ + "/file";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr) << file;
  fclose(f);
  const Status s = check_own_directory(file, "runtime directory");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, MLOS_ERR_SYSTEM);
  EXPECT_NE(s.error().message.find(file + " is not a directory"), std::string::npos) << s.error().message;
  EXPECT_EQ(check_own_directory(root_ + "/missing", "runtime directory").error().sys_errno, ENOENT);
}

TEST_F(OwnDirectoryTest, ADirectoryAnotherUserPlantedIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another uid needs root";
  // As /tmp/mlos-<uid> made by another user first, closed to writes by
  // others so that only its owner is wrong.
  const std::string planted = root_ + "/mlos-1000";
  ASSERT_EQ(mkdir(planted.c_str(), 0755), 0);
  ASSERT_EQ(chown(planted.c_str(), kOtherUid, kOtherUid), 0);
  const Status top = make_own_directory(planted, 0700, "runtime directory");
  ASSERT_FALSE(top);
  EXPECT_EQ(top.error().code, MLOS_ERR_PERMISSION);
  EXPECT_EQ(top.error().message, "runtime directory " + planted +
                                     " belongs to uid 65534, neither this user nor root; refusing to use it");
}

}  // namespace
}  // namespace mlos::os
