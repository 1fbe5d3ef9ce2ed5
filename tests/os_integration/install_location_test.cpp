// SPDX-License-Identifier: Apache-2.0
// Where this process finds mlOS's other parts, on the real kernel: the
// binary holding mlOS's code is read from /proc/self/maps (this test links
// mlOS statically, so it is the test program), and the trust test mlosd
// applies to a sibling before it runs it walks every directory above it.
#include "os/install_location.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

#include "os/trusted_path.h"

namespace mlos::os {
namespace {

std::string directory_of_this_program() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

TEST(InstallLocation, TheBinaryHoldingMlosCodeIsFoundFromProcSelfMaps) {
  const std::string dir = own_binary_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(dir, directory_of_this_program());
}

TEST(InstallLocation, AVariableNamesThePartAloneAndAMissingOneIsUnsupported) {
  // A variable of the table (core/environment.h): locate_install_part reads through os::env.
  const char* before = getenv("MLOS_POLICY_HOST");
  const bool was_set = before != nullptr;
  const std::string saved = was_set ? before : "";
  setenv("MLOS_POLICY_HOST", "/nonexistent/mlos-policyhost", 1);
  auto found = locate_install_part(InstallPart::kPolicyHost, "MLOS_POLICY_HOST");
  unsetenv("MLOS_POLICY_HOST");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(found.error().message.find("/nonexistent/mlos-policyhost"), std::string::npos) << found.error().message;
  EXPECT_NE(found.error().message.find("MLOS_POLICY_HOST"), std::string::npos) << found.error().message;
  // The variable's file, when it exists, is the answer (resolved).
  setenv("MLOS_POLICY_HOST", "/bin/../bin/sh", 1);
  auto sh = locate_install_part(InstallPart::kPolicyHost, "MLOS_POLICY_HOST");
  if (was_set) {
    setenv("MLOS_POLICY_HOST", saved.c_str(), 1);
  } else {
    unsetenv("MLOS_POLICY_HOST");
  }
  ASSERT_TRUE(sh.ok()) << sh.error().describe();
  EXPECT_EQ(sh->find(".."), std::string::npos) << *sh;
}

TEST(InstallLocation, TheConfiguredPathsAreAbsolute) {
  for (auto part : {InstallPart::kPolicyHost, InstallPart::kPolicyDir, InstallPart::kDataloadHelper,
                    InstallPart::kGpushareLibrary, InstallPart::kDaemon}) {
    const std::string path = configured_install_part_path(part);
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(path[0], '/') << path;
    EXPECT_NE(path.find(install_part_file(part)), std::string::npos) << path;
  }
}

// A directory tree of root's, not writable by group or others, under /run
// (the trust test must pass above it: /tmp is writable by all).
class TrustedPath : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the trust test's root-owned fixture needs root";
    char tmpl[] = "/run/mlos-trust-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) GTEST_SKIP() << "cannot make a directory under /run";
    dir_ = tmpl;
    if (!untrusted_reason("/run").empty()) GTEST_SKIP() << "/run itself fails the test: " << untrusted_reason("/run");
    std::ofstream(dir_ + "/host") << "x";
    chmod((dir_ + "/host").c_str(), 0755);
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_;
};

TEST_F(TrustedPath, RootsFileInRootsDirectoriesPasses) { EXPECT_EQ(untrusted_reason(dir_ + "/host"), ""); }

TEST_F(TrustedPath, AGroupWritableDirectoryAboveTheFileIsNamed) {
  chmod(dir_.c_str(), 0775);
  EXPECT_EQ(untrusted_reason(dir_ + "/host"), dir_ + " is writable by its group or by others");
}

TEST_F(TrustedPath, AFileOwnedByAnotherUserIsNamed) {
  ASSERT_EQ(chown((dir_ + "/host").c_str(), 4321, 4321), 0);
  EXPECT_EQ(untrusted_reason(dir_ + "/host"), dir_ + "/host is owned by uid 4321, not root");
}

TEST_F(TrustedPath, AStickyDirectoryOfRootsAboveIsPassedButNotAsTheLeaf) {
  char tmpl[] = "/tmp/mlos-trust-sticky-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string under_tmp = tmpl;
  chmod(under_tmp.c_str(), 0755);
  std::ofstream(under_tmp + "/host") << "x";
  chmod((under_tmp + "/host").c_str(), 0755);
  EXPECT_EQ(untrusted_reason(under_tmp + "/host"), "") << "only root can rename root's entry in /tmp";
  EXPECT_EQ(untrusted_reason("/tmp"), "/tmp is writable by its group or by others") << "but anyone may add to /tmp";
  ASSERT_EQ(chown(under_tmp.c_str(), 4321, 4321), 0);
  EXPECT_EQ(untrusted_reason(under_tmp + "/host"), under_tmp + " is owned by uid 4321, not root");
  EXPECT_EQ(untrusted_reason(under_tmp + "/host", 4321), "") << "the trusted user's own directory";
  std::system(("rm -rf '" + under_tmp + "'").c_str());
}

TEST_F(TrustedPath, ASymlinkIsJudgedByWhereItLeads) {
  ASSERT_EQ(symlink("/tmp", (dir_ + "/to-tmp").c_str()), 0);
  const std::string why = untrusted_reason(dir_ + "/to-tmp");
  EXPECT_EQ(why, "/tmp is writable by its group or by others");
  EXPECT_NE(untrusted_reason(dir_ + "/missing").find("cannot be resolved"), std::string::npos);
}

}  // namespace
}  // namespace mlos::os
