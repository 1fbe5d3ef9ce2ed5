// SPDX-License-Identifier: Apache-2.0
// The policy-module entry points through the shared library: every
// argument is checked (with its documented code) before anything is sent,
// and the embedded engine serves the policies itself, from the host and
// policies it finds next to this build's libmlos (build/bin,
// build/policies). mlosd's side is tests/e2e/test_policies.py.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mlos/training.h>

namespace {

class PolicyApi : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* mode = getenv("MLOS_MODE");
    saved_mode_ = mode ? mode : "";
    had_mode_ = mode != nullptr;
    setenv("MLOS_MODE", "embedded", 1);
    // Advice here comes from the policy a test asks for only. (The
    // library reads this once, at its first job in the process.)
    setenv("MLOS_DEFAULT_POLICIES", "", 1);
    mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                            .priority = 0, .exclusive_cpus = false};
    ASSERT_EQ(mlos_training_request_resources(&req, &res_), MLOS_OK) << mlos_last_error_message();
  }
  void TearDown() override {
    EXPECT_EQ(mlos_training_release_resources(res_), MLOS_OK);
    if (had_mode_) setenv("MLOS_MODE", saved_mode_.c_str(), 1);
    else unsetenv("MLOS_MODE");
  }
  static std::string message() { return mlos_last_error_message(); }
  // Whether the library finds a policy host (a build without one, such as
  // the sanitizer build's, answers UNSUPPORTED saying where it looked).
  bool has_policy_host() {
    mlos_training_advice_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    const int rc = mlos_training_get_advice(res_, &a);
    return !(rc == MLOS_ERR_UNSUPPORTED && message().find("no policy host") != std::string::npos);
  }

  mlos_training_resources_t* res_ = nullptr;
  std::string saved_mode_;
  bool had_mode_ = false;
};

// Children of this process whose command is mlos-policyhost.
std::vector<pid_t> host_children() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const pid_t pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string comm = text.substr(open + 1, close - open - 1);
    char state = 0;
    int ppid = 0;
    if (sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
    // comm is cut at 15 characters: "mlos-policyhost" fits exactly.
    if (ppid == getpid() && comm == "mlos-policyhost" && state != 'Z') out.push_back(pid);
  }
  closedir(d);
  return out;
}

mlos_training_advice_t advice_of(mlos_training_resources_t* res) {
  mlos_training_advice_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  EXPECT_EQ(mlos_training_get_advice(res, &a), MLOS_OK) << mlos_last_error_message();
  return a;
}

TEST_F(PolicyApi, BadHandlesAreInvalidHandle) {
  auto* fake = reinterpret_cast<mlos_training_resources_t*>(0x4321);
  mlos_training_advice_t advice = {.struct_size = sizeof advice};
  for (mlos_training_resources_t* h : {fake, static_cast<mlos_training_resources_t*>(nullptr)}) {
    EXPECT_EQ(mlos_training_request_policy(h, "example", nullptr), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_release_policy(h, "example"), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_get_advice(h, &advice), MLOS_ERR_INVALID_HANDLE);
  }
}

TEST_F(PolicyApi, NamesAndConfigsAreCheckedBeforeTheEngineIsAsked) {
  EXPECT_EQ(mlos_training_request_policy(res_, nullptr, "{}"), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_request_policy(res_, "", "{}"), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_request_policy(res_, "bad\xff", "{}"), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("UTF-8"), std::string::npos) << message();
  for (const char* config : {"", "[]", "1", "\"threads\"", "{\"threads\": 1", "{} {}", "null"}) {
    EXPECT_EQ(mlos_training_request_policy(res_, "example", config), MLOS_ERR_INVALID_ARGUMENT) << config;
    EXPECT_NE(message().find("not a JSON object"), std::string::npos) << message();
    EXPECT_NE(message().find("example"), std::string::npos) << message();
  }
  EXPECT_EQ(mlos_training_release_policy(res_, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_release_policy(res_, ""), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_get_advice(res_, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_training_advice_t small = {.struct_size = 8};
  EXPECT_EQ(mlos_training_get_advice(res_, &small), MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(small.threads, 0);  // untouched
}

TEST_F(PolicyApi, TheEmbeddedEngineServesAPolicyFromAHostItStarts) {
  if (!has_policy_host()) GTEST_SKIP() << message();
  mlos_training_advice_t before = advice_of(res_);
  EXPECT_EQ(before.policies, 0);
  EXPECT_EQ(before.threads_advised, 0);
  EXPECT_GE(before.threads, 1);
  // Asked from a thread that ends at once: the host must outlive it (it is
  // started by the library's own policy thread, and dies with that one).
  int rc = -1;
  std::thread([&] { rc = mlos_training_request_policy(res_, "example", "{\"threads\": 1}"); }).join();
  ASSERT_EQ(rc, MLOS_OK) << message();
  usleep(100 * 1000);
  EXPECT_EQ(host_children().size(), 1u);
  mlos_training_advice_t a = advice_of(res_);
  EXPECT_EQ(a.policies, 1);
  EXPECT_EQ(a.policies_failed, 0);
  EXPECT_EQ(a.threads_advised, 1);
  EXPECT_EQ(a.threads, 1);
  // Asking again with the same config is a no-op; another config is refused.
  EXPECT_EQ(mlos_training_request_policy(res_, "example", "{\"threads\": 1}"), MLOS_OK) << message();
  EXPECT_EQ(mlos_training_request_policy(res_, "example", "{\"threads\": 2}"), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("another config"), std::string::npos) << message();

  EXPECT_EQ(mlos_training_release_policy(res_, "example"), MLOS_OK) << message();
  mlos_training_advice_t after = advice_of(res_);
  EXPECT_EQ(after.policies, 0);
  EXPECT_EQ(after.threads_advised, 0);
  EXPECT_EQ(after.threads, before.threads);
  EXPECT_EQ(mlos_training_release_policy(res_, "example"), MLOS_ERR_NOT_FOUND);
  EXPECT_NE(message().find("does not use policy 'example'"), std::string::npos) << message();
}

TEST_F(PolicyApi, TheEmbeddedEngineRefusesUnknownPoliciesAndBadConfigsByName) {
  if (!has_policy_host()) GTEST_SKIP() << message();
  EXPECT_EQ(mlos_training_request_policy(res_, "no-such-policy", nullptr), MLOS_ERR_NOT_FOUND);
  EXPECT_NE(message().find("no-such-policy"), std::string::npos) << message();
  EXPECT_NE(message().find("/policies"), std::string::npos) << message();  // the directory looked in
  EXPECT_EQ(mlos_training_request_policy(res_, "example", "{\"thread\": 1}"), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("unknown key"), std::string::npos) << message();
  EXPECT_EQ(advice_of(res_).policies, 0);  // nothing attached by a refusal
}

TEST_F(PolicyApi, TwoJobsShareOneHostAndOneJobsReleaseLeavesTheOthersPolicy) {
  if (!has_policy_host()) GTEST_SKIP() << message();
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* other = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &other), MLOS_OK) << message();
  ASSERT_EQ(mlos_training_request_policy(other, "example", "{\"threads\": 1}"), MLOS_OK) << message();
  ASSERT_EQ(mlos_training_request_policy(res_, "example", nullptr), MLOS_OK) << message();
  EXPECT_EQ(host_children().size(), 1u);  // one host serves both jobs
  EXPECT_EQ(mlos_training_release_resources(other), MLOS_OK);
  EXPECT_EQ(advice_of(res_).policies, 1);  // the other job's release leaves this one's policy
}

}  // namespace

namespace {

TEST_F(PolicyApi, ReadLogCallsCheckTheirArgumentsAndTheHandle) {
  auto* fake = reinterpret_cast<mlos_training_resources_t*>(0x4321);
  const char* one[] = {"/data/a"};
  EXPECT_EQ(mlos_training_record_read(fake, "/data/a", 0, 0), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_training_announce_reads(nullptr, one, 1), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_training_record_read(res_, nullptr, 0, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_record_read(res_, "", 0, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_record_read(res_, "bad\xff", 0, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("UTF-8"), std::string::npos) << message();
  EXPECT_EQ(mlos_training_record_read(res_, std::string(5000, 'a').c_str(), 0, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_record_read(res_, "/data/a", UINT64_MAX, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_record_read(res_, "/data/a", INT64_MAX, 1), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_announce_reads(res_, nullptr, 2), MLOS_ERR_INVALID_ARGUMENT);
  const char* bad[] = {"/data/a", ""};
  EXPECT_EQ(mlos_training_announce_reads(res_, bad, 2), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("paths[1]"), std::string::npos) << message();
  // An embedded job has a read log, with or without a policy to read it.
  EXPECT_EQ(mlos_training_record_read(res_, "/data/a", 0, 4096), MLOS_OK) << message();
  EXPECT_EQ(mlos_training_record_read(res_, "relative/b", 4096, 0), MLOS_OK) << message();
  EXPECT_EQ(mlos_training_announce_reads(res_, one, 1), MLOS_OK) << message();
  EXPECT_EQ(mlos_training_announce_reads(res_, nullptr, 0), MLOS_OK) << "withdraws the plan";
}

TEST_F(PolicyApi, PrefetchAttachesToAnEmbeddedJob) {
  if (!has_policy_host()) GTEST_SKIP() << message();
  ASSERT_EQ(mlos_training_request_policy(res_, "prefetch", "{\"ahead_mb\": 16}"), MLOS_OK) << message();
  EXPECT_EQ(mlos_training_request_policy(res_, "prefetch", "{\"ahead\": 16}"), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(advice_of(res_).policies, 1);
  EXPECT_EQ(mlos_training_release_policy(res_, "prefetch"), MLOS_OK) << message();
}

}  // namespace
