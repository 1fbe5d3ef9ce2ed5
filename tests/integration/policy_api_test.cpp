// The policy-module entry points through the shared library: every
// argument is checked (with its documented code) before anything is sent,
// and the embedded engine answers UNSUPPORTED with the reason. mlosd's
// side is tests/e2e/test_policies.py.
#include <stdlib.h>

#include <cstddef>
#include <cstring>
#include <string>

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

  mlos_training_resources_t* res_ = nullptr;
  std::string saved_mode_;
  bool had_mode_ = false;
};

constexpr const char* kReason = "policy modules need mlosd in this version (embedded policy hosts are not built yet)";

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

TEST_F(PolicyApi, TheEmbeddedEngineAnswersUnsupportedWithTheReason) {
  EXPECT_EQ(mlos_training_request_policy(res_, "example", "{\"threads\": 1}"), MLOS_ERR_UNSUPPORTED);
  EXPECT_EQ(message(), kReason);
  EXPECT_EQ(mlos_training_request_policy(res_, "example", nullptr), MLOS_ERR_UNSUPPORTED);
  EXPECT_EQ(mlos_training_release_policy(res_, "example"), MLOS_ERR_UNSUPPORTED);
  EXPECT_EQ(message(), kReason);
  mlos_training_advice_t advice;
  memset(&advice, 0x5a, sizeof advice);
  advice.struct_size = sizeof advice;
  EXPECT_EQ(mlos_training_get_advice(res_, &advice), MLOS_ERR_UNSUPPORTED);
  EXPECT_EQ(message(), kReason);
  EXPECT_EQ(advice.policies, 0x5a5a5a5a);  // nothing filled on failure
  // The job itself is unaffected: it still reports its placement.
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  EXPECT_EQ(mlos_training_get_placement(res_, &pl), MLOS_OK);
  EXPECT_EQ(pl.num_cpus, 1);
}

}  // namespace
