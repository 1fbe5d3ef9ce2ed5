// SPDX-License-Identifier: Apache-2.0
// Policy-module calls of a Job: forwarded for its claim to the broker; a
// broker without a policy service refuses them (UNSUPPORTED, with the
// reason; the embedded engine's service is tests/policy/
// embedded_policies_test.cpp); a released
// job, or a release that overtakes the call, is INVALID_HANDLE. And the
// parsing of mlosd's "advice" object.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "engine/job.h"
#include "engine/ledger_claim_broker.h"
#include "engine/policy_advice.h"
#include "engine/policy_report_file.h"
#include "fakes/fake_broker.h"
#include "fakes/fake_kernel.h"
#include "os/ledger_file.h"
#include "os/process_info.h"

using mlos_test::FakeBroker;
using mlos_test::FakeKernel;
using nlohmann::json;

namespace {

// Grants like FakeBroker and records the policy calls it is given.
class PolicyBroker final : public mlos::ClaimBroker {
 public:
  explicit PolicyBroker(mlos::Topology t) : inner_(std::move(t)) {}
  mlos::Result<mlos::Grant> acquire(const mlos::ClaimRequest& r) override { return inner_.acquire(r); }
  mlos::Status release(uint64_t id) override { return inner_.release(id); }
  const mlos::Topology& topology() const override { return inner_.topology(); }
  mlos::CpuSet allowed_cpus() const override { return inner_.allowed_cpus(); }
  const char* engine() const override { return "fake-daemon"; }

  mlos::Result<std::vector<std::string>> request_policy(uint64_t claim, const std::string& name,
                                                        const json& config) override {
    calls.push_back("request " + std::to_string(claim) + " " + name + " " + config.dump());
    if (during) during();
    return std::vector<std::string>{"phase-weights", name};
  }
  mlos::Status release_policy(uint64_t claim, const std::string& name) override {
    calls.push_back("release " + std::to_string(claim) + " " + name);
    return mlos::make_error(MLOS_ERR_NOT_FOUND, "job does not use " + name);
  }
  mlos::Result<mlos::PolicyAdvice> advice(uint64_t claim) override {
    calls.push_back("advice " + std::to_string(claim));
    if (during) during();
    mlos::PolicyAdvice a;
    a.threads = 3;
    a.threads_advised = true;
    return a;
  }

  std::vector<std::string> calls;
  std::function<void()> during;  // runs inside a call, as a racing thread would

 private:
  FakeBroker inner_;
};

class JobPoliciesTest : public ::testing::Test {
 protected:
  std::shared_ptr<mlos::Job> make_job(std::shared_ptr<mlos::ClaimBroker> broker) {
    mlos::ClaimRequest r;
    r.placement.num_cpus = 2;
    auto grant = broker->acquire(r);
    EXPECT_TRUE(grant.ok());
    return std::make_shared<mlos::Job>(mlos::JobSpec{r.placement, 0, "t"}, *grant, broker, kernel,
                                       [] { return uint64_t{1000}; }, threads);
  }
  FakeKernel kernel;
  mlos::ThreadRegistry threads;
  mlos::Topology topo = mlos::make_uniform_topology(1, 4, 1);
};

TEST_F(JobPoliciesTest, ABrokerWithoutAPolicyServiceRefusesEveryPolicyCallSayingWhy) {
  auto job = make_job(std::make_shared<FakeBroker>(topo));  // ClaimBroker's defaults
  auto requested = job->request_policy("example", json::object());
  ASSERT_FALSE(requested.ok());
  EXPECT_EQ(requested.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_EQ(requested.error().message,
            "this engine serves no policy modules (it was made without a policy service)");
  mlos::Status released = job->release_policy("example");
  EXPECT_EQ(released.error().code, MLOS_ERR_UNSUPPORTED);
  auto advice = job->advice();
  ASSERT_FALSE(advice.ok());
  EXPECT_EQ(advice.error().code, MLOS_ERR_UNSUPPORTED);
}

TEST_F(JobPoliciesTest, CallsGoToTheBrokerForTheJobsClaim) {
  auto broker = std::make_shared<PolicyBroker>(topo);
  auto job = make_job(broker);
  auto names = job->request_policy("example", json{{"threads", 1}});
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"phase-weights", "example"}));
  EXPECT_EQ(job->release_policy("example").error().code, MLOS_ERR_NOT_FOUND);
  auto advice = job->advice();
  ASSERT_TRUE(advice.ok());
  EXPECT_EQ(advice->threads, 3);
  EXPECT_EQ(broker->calls, (std::vector<std::string>{"request 1 example {\"threads\":1}", "release 1 example",
                                                     "advice 1"}));
}

TEST_F(JobPoliciesTest, AReleasedJobIsInvalidHandleAndTheBrokerIsNotAsked) {
  auto broker = std::make_shared<PolicyBroker>(topo);
  auto job = make_job(broker);
  ASSERT_TRUE(job->release().ok());
  EXPECT_EQ(job->request_policy("example", json::object()).error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(job->release_policy("example").error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(job->advice().error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_TRUE(broker->calls.empty());
}

TEST_F(JobPoliciesTest, AReleaseThatOvertakesTheCallMakesItInvalidHandle) {
  auto broker = std::make_shared<PolicyBroker>(topo);
  auto job = make_job(broker);
  broker->during = [&] { (void)job->release(); };
  auto advice = job->advice();
  ASSERT_FALSE(advice.ok());
  EXPECT_EQ(advice.error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(broker->calls, std::vector<std::string>{"advice 1"});
  broker->during = nullptr;  // it holds the job, which holds the broker
}

// A ledger broker in a fresh directory on a 4-CPU machine, with `service`
// as its policy service.
struct LedgerBrokerFixture {
  explicit LedgerBrokerFixture(mlos::LedgerClaimBroker::PolicyService service = nullptr) {
    char tmpl[] = "/tmp/mlos-policy-ledger-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    mlos::Topology t = mlos::make_uniform_topology(1, 4, 1);
    broker = std::make_unique<mlos::LedgerClaimBroker>(
        t, t.all_cpus(), mlos::os::LedgerFile(dir), [] { return mlos::MemoryAvailability{}; },
        static_cast<int>(getpid()), std::move(service));
  }
  ~LedgerBrokerFixture() { std::filesystem::remove_all(dir); }
  size_t claims() const {
    auto ledger = broker->ledger().read();
    EXPECT_TRUE(ledger.ok());
    return ledger ? ledger->claims.size() : 0;
  }
  std::string dir;
  std::unique_ptr<mlos::LedgerClaimBroker> broker;
};

mlos::ClaimRequest one_cpu(json policies = json::object(), bool envelope = false) {
  mlos::ClaimRequest r;
  r.placement.num_cpus = 1;
  r.policies = std::move(policies);
  r.envelope = envelope;
  return r;
}

TEST(LedgerClaimBrokerPolicies, WithoutAPolicyServiceARequestWithPoliciesIsRefusedAndNothingIsClaimed) {
  LedgerBrokerFixture f;
  auto r = one_cpu(json{{"example", json::object()}});
  auto grant = f.broker->acquire(r);
  ASSERT_FALSE(grant.ok());
  EXPECT_EQ(grant.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(grant.error().message.find("serves no policy modules"), std::string::npos);
  EXPECT_EQ(f.broker->plan(r).error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_EQ(f.claims(), 0u);
  // A plain request is unaffected, and follows no phases.
  auto plain = f.broker->acquire(one_cpu());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->phase_sink, nullptr);
  EXPECT_EQ(f.broker->advice(plain->claim_id).error().code, MLOS_ERR_UNSUPPORTED);
}

TEST(LedgerClaimBrokerPolicies, AnEnvelopeClaimKeepsNoPoliciesAndNeverAsksTheService) {
  int asked = 0;
  LedgerBrokerFixture f([&]() -> mlos::Result<std::shared_ptr<mlos::EmbeddedPolicies>> {
    ++asked;
    return mlos::make_error(MLOS_ERR_UNSUPPORTED, "no host here");
  });
  auto refused = f.broker->acquire(one_cpu(json{{"example", json::object()}}, /*envelope=*/true));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(refused.error().message.find("MLOS_JOB_POLICIES"), std::string::npos) << refused.error().message;
  EXPECT_EQ(f.claims(), 0u);
  auto envelope = f.broker->acquire(one_cpu(json::object(), /*envelope=*/true));
  ASSERT_TRUE(envelope.ok());
  EXPECT_TRUE(envelope->policies.empty());
  EXPECT_EQ(envelope->phase_sink, nullptr);
  EXPECT_EQ(asked, 0);
}

TEST(LedgerClaimBrokerPolicies, WhenTheServiceIsMissingAJobRunsWithoutPoliciesUnlessItAskedForSome) {
  LedgerBrokerFixture f([]() -> mlos::Result<std::shared_ptr<mlos::EmbeddedPolicies>> {
    return mlos::make_error(MLOS_ERR_UNSUPPORTED, "no policy host (mlos-policyhost) is installed");
  });
  auto plain = f.broker->acquire(one_cpu());
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_TRUE(plain->policies.empty());
  EXPECT_EQ(f.broker->advice(plain->claim_id).error().message, "no policy host (mlos-policyhost) is installed");
  auto asked = f.broker->acquire(one_cpu(json{{"example", json::object()}}));
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.error().message, "no policy host (mlos-policyhost) is installed");
  EXPECT_EQ(f.claims(), 1u);  // the plain one only: the refused claim was dropped
  EXPECT_EQ(f.broker->advice(987654).error().code, MLOS_ERR_INVALID_HANDLE);
}

// A job killed before it could remove its policy report: the report goes
// when the ledger prunes the dead claim, and only that one (a file naming
// another pid under the same id, or a live claim's, stays).
TEST(LedgerClaimBrokerPolicies, PruningADeadClaimRemovesTheReportItsPoliciesLeft) {
  LedgerBrokerFixture f;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  uint64_t dead = 0, live = 0;
  ASSERT_TRUE(mlos::os::LedgerFile(f.dir)
                  .update([&](mlos::ClaimLedger& l) -> mlos::Result<bool> {
                    mlos::Claim c;
                    c.owner = mlos::ProcessId{static_cast<int>(child), 1};
                    c.cpus = mlos::CpuSet::of({0});
                    dead = l.add(c);
                    c.owner = mlos::os::process_id(static_cast<int>(getpid())).value();
                    c.cpus = mlos::CpuSet::of({1});
                    live = l.add(c);
                    return true;
                  })
                  .ok());
  const std::string reports = mlos::policy_report_dir(f.dir);
  ASSERT_TRUE(mlos::write_policy_report(reports, dead, json{{"pid", child}}).ok());
  ASSERT_TRUE(mlos::write_policy_report(reports, live, json{{"pid", getpid()}}).ok());
  ASSERT_TRUE(mlos::write_policy_report(reports, 99, json{{"pid", child}}).ok());
  ASSERT_EQ(f.claims(), 1u) << "read() leaves the dead claim out";
  ASSERT_TRUE(mlos::read_policy_report(reports, dead).has_value()) << "and removes nothing";

  auto grant = f.broker->acquire(one_cpu());  // an update: prunes the dead claim
  ASSERT_TRUE(grant.ok()) << grant.error().describe();
  EXPECT_FALSE(mlos::read_policy_report(reports, dead).has_value());
  EXPECT_TRUE(mlos::read_policy_report(reports, live).has_value());
  EXPECT_TRUE(mlos::read_policy_report(reports, 99).has_value()) << "no claim of its own was pruned";
}

TEST(PolicyAdviceJson, ReadsMlosdsAdvice) {
  auto a = mlos::advice_from_json(json::parse(R"J({"threads": 2, "threads_advised": true, "threads_by": "example",
      "cpu_weight": 400, "cpu_weight_by": "phase-weights", "policies": ["phase-weights", "example"],
      "failed_policies": [{"name": "example", "why": "host crashed (signal 11)"}]})J"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->threads, 2);
  EXPECT_TRUE(a->threads_advised);
  EXPECT_EQ(a->threads_by, "example");
  EXPECT_EQ(a->cpu_weight, 400u);
  EXPECT_EQ(a->cpu_weight_by, "phase-weights");
  EXPECT_EQ(a->policies, (std::vector<std::string>{"phase-weights", "example"}));
  ASSERT_EQ(a->failed.size(), 1u);
  EXPECT_EQ(a->failed[0].name, "example");
  EXPECT_EQ(a->failed[0].why, "host crashed (signal 11)");
}

TEST(PolicyAdviceJson, NullsMeanUnknownOrNobody) {
  auto a = mlos::advice_from_json(json::parse(R"({"threads": 4, "threads_advised": false, "threads_by": null,
      "cpu_weight": null, "cpu_weight_by": null, "policies": [], "failed_policies": []})"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->threads, 4);
  EXPECT_FALSE(a->threads_advised);
  EXPECT_EQ(a->threads_by, "");
  EXPECT_EQ(a->cpu_weight, 0u);
  EXPECT_TRUE(a->policies.empty());
  EXPECT_TRUE(a->failed.empty());
}

TEST(PolicyAdviceJson, WhatItCannotUseIsVersionMismatchNamingTheField) {
  const json good = json::parse(R"({"threads": 2, "threads_advised": true, "policies": []})");
  ASSERT_TRUE(mlos::advice_from_json(good).ok());
  struct Case {
    const char* field;
    json value;
  };
  for (const Case& c : {Case{"threads", 0}, Case{"threads", "2"}, Case{"threads", json(nullptr)},
                        Case{"threads_advised", 1}, Case{"policies", json{1}}, Case{"cpu_weight", -5},
                        Case{"failed_policies", json{{{"why", "no name"}}}}, Case{"threads_by", 3}}) {
    json bad = good;
    bad[c.field] = c.value;
    auto a = mlos::advice_from_json(bad);
    ASSERT_FALSE(a.ok()) << c.field << "=" << c.value.dump();
    EXPECT_EQ(a.error().code, MLOS_ERR_VERSION_MISMATCH);
    EXPECT_NE(a.error().message.find(std::string("'") + c.field + "'"), std::string::npos) << a.error().message;
  }
  EXPECT_EQ(mlos::advice_from_json(json::array()).error().code, MLOS_ERR_VERSION_MISMATCH);
}

}  // namespace
