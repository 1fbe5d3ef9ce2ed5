// SPDX-License-Identifier: Apache-2.0
// Modules the host refuses to run (include/mlos/policy.h's ABI checks),
// names that are not in the directory, and configs a policy refuses: each
// is the requester's answer, nothing is kept loaded, and the manager serves
// the next request as if nothing had happened.
#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

using nlohmann::json;

struct Refusal {
  const char* policy;
  int code;
  const char* says;  // a fragment of the message
};

class RefusedModuleTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusedModuleTest, IsRefusedWithItsReasonAndLeavesTheManagerServing) {
  const Refusal& r = GetParam();
  Harness h;
  h.owner().add_job(1);
  h.owner().add_job(2);

  Status s = h.hosts().attach(r.policy, 1, json::object());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, r.code) << s.error().message;
  EXPECT_NE(s.error().message.find(r.says), std::string::npos) << s.error().message;
  EXPECT_TRUE(h.status_of(r.policy).is_null()) << "a module that cannot load is not kept";
  EXPECT_TRUE(h.hosts().policies_of(1).empty());
  EXPECT_TRUE(child_hosts().empty()) << "its host was reaped";

  ASSERT_TRUE(h.hosts().attach("counter", 2, json::object()).ok());
  EXPECT_EQ(h.status_of("counter")["state"], "running");
  EXPECT_TRUE(h.owner().logged("counter: job 2 attached (1 jobs)"));
}

INSTANTIATE_TEST_SUITE_P(
    Abi, RefusedModuleTest,
    ::testing::Values(Refusal{"bad-abi", MLOS_ERR_VERSION_MISMATCH, "built for policy ABI 99"},
                      Refusal{"small-struct", MLOS_ERR_VERSION_MISMATCH, "its mlos_policy_t is"},
                      Refusal{"no-entry", MLOS_ERR_INVALID_ARGUMENT, "exports no mlos_policy_v1"},
                      Refusal{"null-entry", MLOS_ERR_INVALID_ARGUMENT, "returned NULL"},
                      Refusal{"name-clash", MLOS_ERR_INVALID_ARGUMENT, "calls itself 'example'"}),
    [](const ::testing::TestParamInfo<Refusal>& info) {
      std::string name = info.param.policy;
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

// Crashing in init is a failure to start, not a refusal: it is kept as a
// failure with its backoff, so the requests that follow are answered at
// once instead of each waiting for another start.
TEST(FailedStartTest, IsKeptAsAFailureAndAnsweredAtOnceUntilItIsUnloaded) {
  Harness h;
  h.owner().add_job(1);
  h.owner().add_job(2);
  Status s = h.hosts().attach("crash-init", 1, json::object());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_POLICY_FAILED);
  EXPECT_NE(s.error().message.find("killed by SIGSEGV"), std::string::npos) << s.error().message;
  const json failed = h.status_of("crash-init");
  ASSERT_FALSE(failed.is_null());
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_TRUE(failed["jobs"].empty());
  EXPECT_TRUE(child_hosts().empty()) << "its host was reaped";

  Status again = h.hosts().attach("crash-init", 2, json::object());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, MLOS_ERR_POLICY_FAILED);
  EXPECT_TRUE(child_hosts().empty()) << "no new host while it is in backoff";
  EXPECT_EQ(h.status_of("crash-init")["failures"], 1);

  // No job keeps it: a grace period after its restart time it is gone,
  // and the next request tries afresh.
  h.clock().advance_ms(static_cast<uint64_t>(h.hosts().options().backoff_initial_ms + h.hosts().options().unload_grace_ms));
  h.hosts().poll();
  EXPECT_TRUE(h.status_of("crash-init").is_null());
}

TEST(HostRefusalTest, RefusalIsTheAnswerEvenWhenTheHostExitsBeforeTheFirstRequest) {
  // The stand-in host usually exits before init is sent (EPIPE) or with
  // init unread (ECONNRESET on our side); each time its refusal must win.
  // Many tries, because which of the three orders happens is up to the
  // scheduler.
  PolicyHostsOptions o = test_options();
  o.host_binary = MLOS_REFUSING_HOST_PATH;
  Harness h(o);
  h.owner().add_job(1);
  for (int i = 0; i < 200; ++i) {
    Status s = h.hosts().attach("counter", 1, json::object());
    ASSERT_FALSE(s.ok());
    ASSERT_EQ(s.error().code, MLOS_ERR_VERSION_MISMATCH) << "try " << i << ": " << s.error().message;
    ASSERT_NE(s.error().message.find("refusing-host: built for policy ABI 99"), std::string::npos);
  }
  EXPECT_TRUE(h.hosts().status().empty());
  EXPECT_TRUE(child_hosts().empty());
}

TEST(PolicyNameTest, UnknownNameIsNotFoundNamingTheDirectory) {
  Harness h;
  h.owner().add_job(1);
  Status s = h.hosts().attach("no-such-policy", 1, json::object());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(s.error().message.find("no-such-policy"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find(MLOS_TEST_POLICY_DIR), std::string::npos) << s.error().message;
  EXPECT_TRUE(child_hosts().empty()) << "no host is started for a name not in the catalog";
}

TEST(PolicyConfigTest, RefusedJobConfigNamesTheKeyAndDoesNotAttach) {
  Harness h;
  h.owner().add_job(1);
  h.owner().add_job(2);

  Status s = h.hosts().attach("bad-config", 1, json{{"nope", 1}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.error().message.find("nope"), std::string::npos) << s.error().message;
  EXPECT_TRUE(h.hosts().policies_of(1).empty());

  // A refused config is the job's problem, not the policy's: the same host
  // goes on serving.
  const json before = h.status_of("bad-config");
  ASSERT_FALSE(before.is_null());
  ASSERT_TRUE(h.hosts().attach("bad-config", 2, json::object()).ok());
  const json after = h.status_of("bad-config");
  EXPECT_EQ(after["pid"], before["pid"]);
  EXPECT_EQ(after["failures"], 0);
  EXPECT_EQ(after["jobs"], json::array({2}));
  EXPECT_EQ(h.hosts().policies_of(2), std::vector<std::string>{"bad-config"});
}

TEST(PolicyConfigTest, ConfigThatIsNotAnObjectIsRefusedBeforeAnyHostStarts) {
  Harness h;
  h.owner().add_job(1);
  Status s = h.hosts().attach("counter", 1, json::array());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(h.status_of("counter").is_null());
}

}  // namespace
}  // namespace mlos::policy::testing
