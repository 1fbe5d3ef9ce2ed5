// SPDX-License-Identifier: Apache-2.0
// What mlosd trusts before it runs a policy host or loads a policy into
// one (issue 47, findings 4 and 5): the host binary it starts as root, the
// directories above the policy directory, and the file the host loads,
// which must be the file that was checked.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "policy/policy_catalog.h"
#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uid_t kSomeoneElse = 4321;

// A root-owned 0755 directory under /tmp (sticky and root's: trusted
// above), removed at the end.
class PolicyTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "root's trust rules need root";
    char tmpl[] = "/tmp/mlos-policy-trust-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // A copy of test policy `fixture` as `dir`/`as`.so, root's, 0644.
  void install(const std::string& dir, const std::string& fixture, const std::string& as) {
    fs::create_directories(dir);
    ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
    fs::copy_file(std::string(MLOS_TEST_POLICY_DIR) + "/" + fixture + ".so", dir + "/" + as + ".so",
                  fs::copy_options::overwrite_existing);
    ASSERT_EQ(chmod((dir + "/" + as + ".so").c_str(), 0644), 0);
  }
  std::string dir_;
};

TEST_F(PolicyTrustTest, TheHostLoadsTheFileThatWasCheckedEvenIfItsDirectoryIsSwappedRightAfter) {
  // The attack: between mlosd's check and the host's load, a directory on
  // the way is exchanged for one holding another file of the same name.
  // Here root makes the swap (the parent check keeps anyone else from it);
  // the point is that the host loads the checked descriptor, not the path.
  install(dir_ + "/policies", "counter", "counter");
  install(dir_ + "/other", "crash-init", "counter");  // calls itself crash-init: refused if loaded
  PolicyHostsOptions o = test_options(dir_ + "/policies");
  int swaps = 0;
  o.after_module_check = [&](const std::string&) {
    ASSERT_EQ(renameat2(AT_FDCWD, (dir_ + "/policies").c_str(), AT_FDCWD, (dir_ + "/other").c_str(), RENAME_EXCHANGE), 0);
    ++swaps;
  };
  Harness h(o);
  h.owner().add_job(1);
  Status attached = h.hosts().attach("counter", 1, json::object());
  ASSERT_EQ(swaps, 1);
  ASSERT_TRUE(attached.ok()) << attached.error().describe();
  EXPECT_EQ(h.status_of("counter")["state"], "running");
  EXPECT_TRUE(h.owner().logged("counter: job 1 attached (1 jobs)"));
}

TEST_F(PolicyTrustTest, APolicyDirectoryBelowAnotherUsersDirectoryIsRefusedNamingIt) {
  const std::string theirs = dir_ + "/theirs";
  install(theirs + "/policies", "counter", "counter");
  ASSERT_EQ(chown(theirs.c_str(), kSomeoneElse, kSomeoneElse), 0);
  auto c = scan_policy_dir(theirs + "/policies");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, MLOS_ERR_PERMISSION);
  EXPECT_NE(c.error().message.find(theirs + " is owned by uid 4321, not root"), std::string::npos) << c.error().message;
  Harness h(test_options(theirs + "/policies"));
  h.owner().add_job(1);
  Status attached = h.hosts().attach("counter", 1, json::object());
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.error().code, MLOS_ERR_PERMISSION);
  EXPECT_TRUE(child_hosts().empty());
}

TEST_F(PolicyTrustTest, AHostBinaryAnotherUserCouldReplaceIsNotRunAsRoot) {
  // The attack: the tree's owner replaces the host with a script, and a
  // request for a policy runs it as uid 0.
  const std::string theirs = dir_ + "/tree", marker = dir_ + "/ran-as-root";
  fs::create_directories(theirs);
  {
    std::ofstream script(theirs + "/mlos-policyhost");
    script << "#!/bin/sh\ntouch " << marker << "\n";
  }
  ASSERT_EQ(chmod((theirs + "/mlos-policyhost").c_str(), 0755), 0);
  ASSERT_EQ(chmod(theirs.c_str(), 0755), 0);
  ASSERT_EQ(chown(theirs.c_str(), kSomeoneElse, kSomeoneElse), 0);
  PolicyHostsOptions o = test_options();
  o.host_binary = theirs + "/mlos-policyhost";
  o.start_deadline_ms = 2000;
  Harness h(o, Harness::Clock::kReal);
  h.owner().add_job(1);
  Status attached = h.hosts().attach("counter", 1, json::object());
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.error().code, MLOS_ERR_PERMISSION) << attached.error().describe();
  EXPECT_NE(attached.error().message.find(theirs + " is owned by uid 4321, not root"), std::string::npos)
      << attached.error().message;
  EXPECT_FALSE(fs::exists(marker)) << "the script ran as root";
  // The same binary owned by root in root's directory runs.
  ASSERT_EQ(chown(theirs.c_str(), 0, 0), 0);
  fs::copy_file(MLOS_POLICYHOST_PATH, theirs + "/mlos-policyhost", fs::copy_options::overwrite_existing);
  EXPECT_TRUE(h.hosts().attach("counter", 1, json::object()).ok());
}

}  // namespace
}  // namespace mlos::policy::testing
