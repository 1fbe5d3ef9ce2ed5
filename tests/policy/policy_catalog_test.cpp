// SPDX-License-Identifier: Apache-2.0
// scan_policy_dir on real directories: which files are trusted as policies
// and why the others are skipped.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "policy/policy_catalog.h"

namespace mlos::policy {
namespace {

namespace fs = std::filesystem;

class PolicyCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mlos-policy-catalog-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string make_file(const std::string& name, mode_t mode) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "not really ELF";
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }
  std::optional<uid_t> also() const { return geteuid() == 0 ? std::nullopt : std::optional<uid_t>(geteuid()); }
  std::string why_skipped(const PolicyCatalog& c, const std::string& file) const {
    for (const auto& s : c.skipped) {
      if (s.path == dir_ + "/" + file) return s.why;
    }
    return "(not skipped)";
  }

  std::string dir_;
};

TEST_F(PolicyCatalogTest, OnlyTrustedRegularFilesWithPolicyNamesAreListed) {
  make_file("good.so", 0644);
  make_file("group-writable.so", 0664);
  make_file("world-writable.so", 0646);
  make_file("Bad_Name.so", 0644);
  make_file("README", 0644);
  ASSERT_EQ(symlink((dir_ + "/good.so").c_str(), (dir_ + "/link.so").c_str()), 0);
  ASSERT_EQ(mkdir((dir_ + "/subdir.so").c_str(), 0755), 0);

  auto c = scan_policy_dir(dir_, also());
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->policies.size(), 1u);
  EXPECT_EQ(c->policies[0].name, "good");
  EXPECT_EQ(c->policies[0].path, dir_ + "/good.so");
  EXPECT_EQ(c->skipped.size(), 5u) << "everything ending in .so but good.so; README is not a candidate";
  EXPECT_EQ(why_skipped(*c, "group-writable.so"), "writable by its group or by others");
  EXPECT_EQ(why_skipped(*c, "world-writable.so"), "writable by its group or by others");
  EXPECT_EQ(why_skipped(*c, "link.so"), "a symlink (install the file itself)");
  EXPECT_EQ(why_skipped(*c, "subdir.so"), "not a regular file");
  EXPECT_NE(why_skipped(*c, "Bad_Name.so").find("is not a policy name"), std::string::npos);

  Error e = unknown_policy(*c, "group-writable");
  EXPECT_EQ(e.code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(e.message.find(dir_), std::string::npos);
  EXPECT_NE(e.message.find("writable by its group"), std::string::npos) << e.message;
  EXPECT_EQ(c->find("link"), nullptr);
  ASSERT_NE(c->find("good"), nullptr);
}

TEST_F(PolicyCatalogTest, FileOwnedByAnotherUserIsSkipped) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file away (chown)";
  const std::string path = make_file("foreign.so", 0644);
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  auto c = scan_policy_dir(dir_);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->policies.empty());
  EXPECT_EQ(why_skipped(*c, "foreign.so"), "owned by uid 65534, not root");
  // A user the caller trusts (embedded mode) may own it.
  auto trusting = scan_policy_dir(dir_, uid_t{65534});
  ASSERT_TRUE(trusting.ok());
  ASSERT_EQ(trusting->policies.size(), 1u);
  EXPECT_EQ(trusting->policies[0].name, "foreign");
}

TEST_F(PolicyCatalogTest, WritableDirectoryIsRefusedWhole) {
  make_file("good.so", 0644);
  for (mode_t mode : {0777, 0775, 0757}) {
    ASSERT_EQ(chmod(dir_.c_str(), mode), 0);
    auto c = scan_policy_dir(dir_, also());
    ASSERT_FALSE(c.ok()) << std::oct << mode;
    EXPECT_EQ(c.error().code, MLOS_ERR_PERMISSION);
    EXPECT_NE(c.error().message.find(dir_), std::string::npos) << c.error().message;
  }
}

TEST_F(PolicyCatalogTest, MissingDirectoryIsAnEmptyCatalogAndAFileIsNotADirectory) {
  auto missing = scan_policy_dir(dir_ + "/nope", also());
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->policies.empty());
  EXPECT_TRUE(missing->skipped.empty());

  const std::string file = make_file("plain", 0644);
  auto not_dir = scan_policy_dir(file, also());
  ASSERT_FALSE(not_dir.ok());
  EXPECT_EQ(not_dir.error().code, MLOS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace mlos::policy
