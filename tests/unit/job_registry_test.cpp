// SPDX-License-Identifier: Apache-2.0
// mlosd's job registry: JSON round trip, strict validation, and the
// reconciliation plan a restarting daemon follows.
#include "daemon/job_registry.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

JobRecord job(uint64_t id, int pid, uint64_t start, const char* cpus) {
  JobRecord r;
  r.id = id;
  r.owner = {pid, start};
  r.uid = 1000;
  r.cpus = *CpuSet::parse_list(cpus);
  r.mems = CpuSet::of({0});
  r.exclusive = true;
  r.memory_bytes = 1 << 30;
  r.priority = 2;
  r.label = "train.py";
  r.created_unix = 1700000000;
  return r;
}

JobRegistry sample() {
  JobRegistry r;
  r.next_id = 10;
  r.jobs = {job(3, 100, 5000, "0-3"), job(7, 200, 6000, "4-7")};
  return r;
}

TEST(JobRegistryTest, JsonRoundTripKeepsEveryField) {
  auto back = JobRegistry::from_json(sample().to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->next_id, 10u);
  ASSERT_EQ(back->jobs.size(), 2u);
  const JobRecord& j = back->jobs[1];
  EXPECT_EQ(j.id, 7u);
  EXPECT_EQ(j.owner, (ProcessId{200, 6000}));
  EXPECT_EQ(j.cpus.to_list(), "4-7");
  EXPECT_EQ(j.mems.to_list(), "0");
  EXPECT_TRUE(j.exclusive);
  EXPECT_EQ(j.memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(j.priority, 2);
  EXPECT_EQ(j.label, "train.py");
  EXPECT_EQ(j.cgroup(), "job-7");
  EXPECT_EQ(back->to_json(), sample().to_json());
}

TEST(JobRegistryTest, BadRecordsAreRejectedWhole) {
  auto broken = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = sample().to_json();
    edit(j);
    auto r = JobRegistry::from_json(j);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  EXPECT_NE(broken([](auto& j) { j["schema_version"] = 2; }).find("schema_version"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][0]["id"] = 10; }).find("out of range"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][1]["id"] = 3; }).find("repeated"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][0]["pid"] = 0; }).find("pid"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][0]["cpus"] = ""; }).find("no CPUs"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][0]["cpus"] = "3-1"; }).find("cpus"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][0]["start_time"] = -1; }).find("start_time"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j["jobs"][0].erase("label"); }).find("label"), std::string::npos);
  EXPECT_NE(broken([](auto& j) { j.erase("jobs"); }).find("jobs"), std::string::npos);
}

TEST(JobRegistryTest, ReconcileAdoptsLivePrunesDeadAndReportsStrays) {
  JobRegistry r = sample();
  // Job 3's owner lives; job 7's PID was reused by another process.
  auto alive = [](const ProcessId& p) { return p == ProcessId{100, 5000} || p == ProcessId{200, 9999}; };
  ReconcilePlan plan = reconcile(r, alive, {"job-7", "job-42", "job-3", "job-1"});
  ASSERT_EQ(plan.adopt.size(), 1u);
  EXPECT_EQ(plan.adopt[0].id, 3u);
  EXPECT_EQ(plan.adopt[0].cpus.to_list(), "0-3");  // CPUs unchanged
  ASSERT_EQ(plan.prune.size(), 1u);
  EXPECT_EQ(plan.prune[0].id, 7u);
  EXPECT_EQ(plan.stray_cgroups, (std::vector<std::string>{"job-1", "job-42"}));
  // A live job whose cgroup vanished is still adopted (the daemon recreates it).
  EXPECT_EQ(reconcile(r, alive, {}).adopt.size(), 1u);
}

}  // namespace
}  // namespace mlos::daemon
