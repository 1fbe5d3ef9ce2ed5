// SPDX-License-Identifier: Apache-2.0
// What a running host looks like from outside (/proc): the seccomp filter,
// no new privileges, the address-space limit, nice 10, and, when started as root,
// the identity of nobody.
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

std::map<std::string, std::string> proc_status(pid_t pid) {
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t value = line.find_first_not_of(" \t", colon + 1);
    out[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
  }
  return out;
}

std::string limit_line(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) == 0) return line;
  }
  return "";
}

TEST(PolicyConfinementTest, HostRunsUnderSeccompWithItsLimits) {
  PolicyHostsOptions o = test_options();
  o.memory_limit = 200ull << 20;
  Harness h(o);
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("counter", 1, nlohmann::json::object()).ok());
  const pid_t pid = h.status_of("counter")["pid"].get<pid_t>();

  auto st = proc_status(pid);
  EXPECT_EQ(st["Seccomp"], "2") << "filter mode";
  EXPECT_EQ(st["NoNewPrivs"], "1");
  EXPECT_EQ(st["Threads"], "1");
  std::istringstream as(limit_line(pid, "Max address space"));
  std::string w1, w2, w3, soft, hard;
  as >> w1 >> w2 >> w3 >> soft >> hard;
  EXPECT_EQ(soft, std::to_string(200ull << 20));
  EXPECT_EQ(hard, soft) << "the policy may not raise it back";
  // Below the jobs it serves, for good: nice 10, and RLIMIT_NICE 0.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 19 && fields >> field; ++i) {
  }
  EXPECT_EQ(field, "10") << "the host's nice (field 19 of /proc/<pid>/stat)";
  std::istringstream nice_limit(limit_line(pid, "Max nice priority"));
  std::string n1, n2, n3, nice_soft, nice_hard;
  nice_limit >> n1 >> n2 >> n3 >> nice_soft >> nice_hard;
  EXPECT_EQ(nice_soft, "0");
  EXPECT_EQ(nice_hard, "0");
}

TEST(PolicyConfinementTest, HostStartedByRootRunsAsNobody) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a host started by a user keeps that user";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user nobody on this machine";
  const std::string uid = std::to_string(nobody->pw_uid), gid = std::to_string(nobody->pw_gid);
  Harness h;
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("counter", 1, nlohmann::json::object()).ok());
  const pid_t pid = h.status_of("counter")["pid"].get<pid_t>();

  auto st = proc_status(pid);
  EXPECT_EQ(st["Uid"], uid + "\t" + uid + "\t" + uid + "\t" + uid) << "real, effective, saved, fs";
  EXPECT_EQ(st["Gid"], gid + "\t" + gid + "\t" + gid + "\t" + gid);
  EXPECT_EQ(st["Groups"], "");
  EXPECT_EQ(st["CapPrm"], "0000000000000000");
  EXPECT_EQ(st["CapEff"], "0000000000000000");
}

// A policy of root's in a directory only root may enter (a checkout in
// /root): the host opens it before it becomes nobody and loads it through
// the descriptor.
TEST(PolicyConfinementTest, AHostThatBecameNobodyLoadsAPolicyFromADirectoryOnlyRootEnters) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a host started by a user keeps that user";
  if (getpwnam("nobody") == nullptr) GTEST_SKIP() << "no user nobody on this machine";
  char tmpl[] = "/tmp/mlos-root-only-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;  // 0700, root's
  std::ifstream from(std::string(MLOS_TEST_POLICY_DIR) + "/counter.so", std::ios::binary);
  std::ofstream(dir + "/counter.so", std::ios::binary) << from.rdbuf();
  {
    Harness h(test_options(dir));
    h.owner().add_job(1);
    auto attached = h.hosts().attach("counter", 1, nlohmann::json::object());
    EXPECT_TRUE(attached.ok()) << attached.error().describe();
    if (attached.ok()) {
      const pid_t pid = h.status_of("counter")["pid"].get<pid_t>();
      EXPECT_EQ(proc_status(pid)["Uid"].substr(0, proc_status(pid)["Uid"].find('\t')),
                std::to_string(getpwnam("nobody")->pw_uid));
    }
  }
  std::remove((dir + "/counter.so").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace mlos::policy::testing
