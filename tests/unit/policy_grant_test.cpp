// SPDX-License-Identifier: Apache-2.0
// The policy grant both engines use: what a policy may set on a job, in
// which order the checks refuse, what the engine must carry out, and what
// taking a policy back undoes. Engine-independent: each engine is a
// GrantScope here (mlosd's with a cgroup, the embedded engine's without).
#include "policy/policy_grant.h"

#include <gtest/gtest.h>

namespace mlos::policy {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

GrantScope mlosd_job(uint64_t memory_limit = 512 * kMiB) {
  GrantScope s;
  s.cpus = 2;
  s.uid = 1000;
  s.memory_limit = memory_limit;
  s.no_memory_low = "cgroup v1 has no memory protection";
  s.no_io_weight = "no I/O weight";
  return s;
}

GrantScope embedded_job() {
  GrantScope s = mlosd_job();
  s.no_cgroups = "an embedded job has no cgroup of its own";
  return s;
}

class PolicyGrantTest : public ::testing::Test {
 protected:
  Result<PolicyGranted> grant(const std::string& by, ActionKind kind, uint64_t value, const GrantScope& scope) {
    return g_.grant(by, Action{1, kind, value}, scope, ops_);
  }
  static int code(const Result<PolicyGranted>& r) { return r ? MLOS_OK : r.error().code; }

  PolicyGrant g_;
  std::deque<JobPolicyOp> ops_;
};

TEST_F(PolicyGrantTest, SettingsWithinTheGrantAreRecordedWithWhoSetThem) {
  EXPECT_EQ(*grant("w", ActionKind::kCpuWeight, 300, mlosd_job()), PolicyGranted::kCpuWeight);
  EXPECT_EQ(*grant("t", ActionKind::kThreads, 2, mlosd_job()), PolicyGranted::kNothingToCarryOut);
  EXPECT_EQ(*grant("m", ActionKind::kMemoryHigh, 256 * kMiB, mlosd_job()), PolicyGranted::kMemory);
  EXPECT_EQ(*g_.effects().cpu_weight.value, 300u);
  EXPECT_EQ(g_.effects().cpu_weight.by, "w");
  EXPECT_EQ(g_.threads(1), 2);
  EXPECT_EQ(*g_.effects().memory_high.value, 256 * kMiB);
}

TEST_F(PolicyGrantTest, OutsideTheGrantIsRefusedAndNothingIsSet) {
  EXPECT_EQ(code(grant("t", ActionKind::kThreads, 3, mlosd_job())), MLOS_ERR_PERMISSION);
  EXPECT_EQ(code(grant("t", ActionKind::kThreads, 0, mlosd_job())), MLOS_ERR_PERMISSION);
  EXPECT_EQ(code(grant("w", ActionKind::kCpuWeight, 0, mlosd_job())), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(code(grant("w", ActionKind::kCpuWeight, 10001, mlosd_job())), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(code(grant("m", ActionKind::kMemoryHigh, 513 * kMiB, mlosd_job())), MLOS_ERR_PERMISSION);
  EXPECT_EQ(code(grant("m", ActionKind::kMemoryHigh, 1, mlosd_job(0))), MLOS_ERR_PERMISSION);  // no limit
  EXPECT_EQ(code(grant("m", ActionKind::kMemoryLow, kMiB, mlosd_job())), MLOS_ERR_UNSUPPORTED);  // v1
  EXPECT_EQ(code(grant("io", ActionKind::kIoWeight, 100, mlosd_job())), MLOS_ERR_UNSUPPORTED);
  EXPECT_FALSE(g_.effects().threads.value);
  EXPECT_FALSE(g_.effects().cpu_weight.value);
  EXPECT_FALSE(g_.effects().memory_high.value);
  EXPECT_FALSE(g_.effects().memory_low.value);
  EXPECT_EQ(g_.threads(0), 1);  // the grant's count, at least one
}

TEST_F(PolicyGrantTest, TheJobsOwnRefusalsComeAfterTheGrantsAndTheEnginesBeforeAll) {
  GrantScope nested = mlosd_job();
  nested.no_memory = "the job has no cgroup of its own";
  // The value is judged against the grant first (PERMISSION), then what the
  // job can take (UNSUPPORTED).
  EXPECT_EQ(code(grant("m", ActionKind::kMemoryHigh, 513 * kMiB, nested)), MLOS_ERR_PERMISSION);
  auto high = grant("m", ActionKind::kMemoryHigh, kMiB, nested);
  ASSERT_FALSE(high);
  EXPECT_EQ(high.error().message, "the job has no cgroup of its own");
  GrantScope no_cgroups = mlosd_job();
  no_cgroups.no_cpu_weight = "mlosd runs without cgroups";
  EXPECT_EQ(code(grant("w", ActionKind::kCpuWeight, 0, no_cgroups)), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(code(grant("w", ActionKind::kCpuWeight, 100, no_cgroups)), MLOS_ERR_UNSUPPORTED);
  // An engine without cgroups refuses every cgroup setting whatever its value,
  // naming the setting.
  for (ActionKind kind : {ActionKind::kCpuWeight, ActionKind::kMemoryHigh, ActionKind::kMemoryLow,
                          ActionKind::kIoWeight}) {
    auto r = grant("x", kind, 0, embedded_job());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, MLOS_ERR_UNSUPPORTED);
    EXPECT_EQ(r.error().message, std::string(action_kind_name(kind)) + ": an embedded job has no cgroup of its own");
  }
  EXPECT_EQ(*grant("t", ActionKind::kThreads, 1, embedded_job()), PolicyGranted::kNothingToCarryOut);
}

TEST_F(PolicyGrantTest, ReportsAreShownAndRequestsQueued) {
  Action report{1, ActionKind::kReport};
  report.payload = R"({"chose": "x"})";
  EXPECT_EQ(*g_.grant("p", report, mlosd_job(), ops_), PolicyGranted::kReport);
  Action request{1, ActionKind::kRequestPolicy};
  request.target = "other";
  request.payload = "{}";
  EXPECT_EQ(*g_.grant("p", request, mlosd_job(), ops_), PolicyGranted::kQueued);
  ASSERT_EQ(ops_.size(), 1u);
  EXPECT_EQ(ops_.front().target, "other");
  EXPECT_TRUE(g_.requests().report()["reports"].contains("p"));
}

TEST_F(PolicyGrantTest, TakingAPolicyBackUndoesExactlyItsOwn) {
  ASSERT_TRUE(grant("w", ActionKind::kCpuWeight, 300, mlosd_job()));
  ASSERT_TRUE(grant("m", ActionKind::kMemoryHigh, kMiB, mlosd_job()));
  Action report{1, ActionKind::kReport};
  report.payload = "{}";
  ASSERT_TRUE(g_.grant("m", report, mlosd_job(), ops_));
  PolicyTakenBack none = g_.take_back("nobody", 1, ops_);
  EXPECT_FALSE(none.effects || none.memory || none.report);
  PolicyTakenBack m = g_.take_back("m", 1, ops_);
  EXPECT_TRUE(m.effects);
  EXPECT_TRUE(m.memory);
  EXPECT_TRUE(m.report);
  EXPECT_TRUE(g_.effects().cpu_weight.value);  // w's stays
  PolicyTakenBack w = g_.take_back("w", 1, ops_);
  EXPECT_TRUE(w.effects);
  EXPECT_FALSE(w.memory);
  EXPECT_FALSE(g_.effects().cpu_weight.value);
}

TEST(JobFiguresTest, WhatAnEngineKnowsIsPassedAndWhatItDoesNotStaysUnknown) {
  JobFigureSources in;
  in.job = 9;
  in.now_ns = 2'500'000'000;
  in.cpus = *CpuSet::parse_list("2-3");
  in.recommended_threads = 2;
  in.memory_limit_bytes = kMiB;
  mlos_policy_job_figures_t unknown = job_figures(in);
  EXPECT_EQ(unknown.job, 9u);
  EXPECT_DOUBLE_EQ(unknown.now_seconds, 2.5);
  EXPECT_EQ(unknown.phase, MLOS_TRAINING_PHASE_IDLE);
  EXPECT_EQ(unknown.num_cpus, 2);
  EXPECT_EQ(unknown.memory_known, 0);
  EXPECT_EQ(unknown.cpu_seconds, empty_figures(9).cpu_seconds);
  EXPECT_EQ(unknown.memory_pressure_level, empty_figures(9).memory_pressure_level);
  EXPECT_EQ(unknown.collective_seconds, empty_figures(9).collective_seconds);
  in.phase = MLOS_TRAINING_PHASE_BACKWARD;
  in.memory_bytes = 4096;
  in.cpu_seconds = 1.5;
  in.memory_pressure_level = 1;
  in.collective_seconds = 0.25;
  mlos_policy_job_figures_t known = job_figures(in);
  EXPECT_EQ(known.phase, MLOS_TRAINING_PHASE_BACKWARD);
  EXPECT_EQ(known.memory_known, 1);
  EXPECT_EQ(known.memory_bytes, 4096u);
  EXPECT_DOUBLE_EQ(known.cpu_seconds, 1.5);
  EXPECT_EQ(known.memory_pressure_level, 1);
  EXPECT_DOUBLE_EQ(known.collective_seconds, 0.25);
}

}  // namespace
}  // namespace mlos::policy
