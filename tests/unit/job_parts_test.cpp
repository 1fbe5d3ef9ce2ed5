// SPDX-License-Identifier: Apache-2.0
// mlosd's job parts on their own, below JobManager: JobCgroups over the
// cgroup v2 driver on an in-memory cgroupfs (limits, a weight steered by
// the phases of a job and the jobs nested in it, a guest widening its
// host), job status (a job's sample and status entry from what it is
// given), and watch_memory's arguments.
#include <gtest/gtest.h>

#include "core/placement.h"
#include "core/topology.h"
#include "daemon/job_book.h"
#include "daemon/job_cgroups.h"
#include "daemon/job_memory_watches.h"
#include "daemon/job_status.h"
#include "fakes/fake_cgroup_v2_fs.h"
#include "os/cgroup/cgroup_driver.h"

namespace mlos::daemon {
namespace {

using nlohmann::json;
using mlos_test::FakeCgroupV2Fs;

LiveJob live(uint64_t id, const char* cpus) {
  LiveJob j{JobRecord{}, std::nullopt, PhaseProfile(0)};
  j.record.id = id;
  j.record.owner = ProcessId{static_cast<int>(100 + id), 7};
  j.record.cpus = *CpuSet::parse_list(cpus);
  j.record.mems = *CpuSet::parse_list("0");
  j.record.label = "job" + std::to_string(id);
  return j;
}

class JobCgroupsTest : public ::testing::Test {
 protected:
  LiveJob& add(LiveJob j) {
    LiveJob& in = jobs_.emplace(j.record.id, std::move(j)).first->second;
    book_.add(in.record);
    return in;
  }
  std::string file(uint64_t job, const std::string& name) const {
    return fs_->file("mlos/job-" + std::to_string(job) + "/" + name).value_or("<none>");
  }

  std::shared_ptr<FakeCgroupV2Fs> fs_ =
      std::make_shared<FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "io", "memory"});
  Topology topology_ = make_uniform_topology(1, 4, 1);
  PhaseWeights weights_ = PhaseWeights::defaults();
  JobBook book_{4, 0};
  JobCgroups::Jobs jobs_;
  JobCgroups cgroups_{os::make_cgroup_v2_driver(fs_, "mlos"), topology_, weights_, book_, jobs_};
};

TEST_F(JobCgroupsTest, AJobsCgroupGetsItsCpusMemoryAndTheWeightOfItsPhase) {
  LiveJob& j = add(live(1, "0-1"));
  j.record.memory_bytes = 1'000'000'000;
  cgroups_.apply(j, true);
  EXPECT_EQ(file(1, "cpuset.cpus"), "0-1");
  EXPECT_EQ(file(1, "memory.max"), "1000000000");
  EXPECT_EQ(file(1, "memory.high"), "900000000");  // reclaim starts at 90 %
  const uint32_t forward = weights_.weight(MLOS_TRAINING_PHASE_FORWARD, 0);
  EXPECT_EQ(file(1, "cpu.weight"), std::to_string(forward)) << "unmarked: FORWARD's weight";
  EXPECT_EQ(j.weight, forward);
  EXPECT_EQ(cgroups_.cgroup_of(j), "job-1");
  // A phase seen: refresh rewrites the weight only when it changed.
  j.marked = true;
  j.phase = MLOS_TRAINING_PHASE_DATA_LOADING;
  cgroups_.refresh(j);
  EXPECT_EQ(file(1, "cpu.weight"), std::to_string(weights_.weight(MLOS_TRAINING_PHASE_DATA_LOADING, 0)));
}

TEST_F(JobCgroupsTest, ANestedJobsPhaseSteersItsEnvelopesCgroupAndHasNoneOfItsOwn) {
  LiveJob& envelope = add(live(1, "0-3"));
  envelope.record.envelope = true;
  cgroups_.apply(envelope, true);
  LiveJob nested = live(2, "0-1");
  nested.record.parent = 1;
  LiveJob& inner = add(std::move(nested));
  cgroups_.apply(inner, true);  // a nested job lives in its envelope's cgroup
  EXPECT_FALSE(fs_->exists("mlos/job-2"));
  EXPECT_EQ(cgroups_.cgroup_of(inner), "job-1");
  inner.marked = true;
  inner.phase = MLOS_TRAINING_PHASE_CHECKPOINT;
  cgroups_.refresh(envelope);
  // The envelope marks no phase itself: its nested job's phase alone steers.
  EXPECT_EQ(file(1, "cpu.weight"), std::to_string(weights_.weight(MLOS_TRAINING_PHASE_CHECKPOINT, 0)));
  envelope.marked = true;
  envelope.phase = MLOS_TRAINING_PHASE_IDLE;
  cgroups_.refresh(envelope);
  const uint32_t largest = std::max(weights_.weight(MLOS_TRAINING_PHASE_CHECKPOINT, 0),
                                    weights_.weight(MLOS_TRAINING_PHASE_IDLE, 0));
  EXPECT_EQ(file(1, "cpu.weight"), std::to_string(largest)) << "the largest weight any of them asks for";
}

TEST_F(JobCgroupsTest, AGuestWidensItsHostsCgroupAndAPolicysWeightStandsForThePhases) {
  LiveJob& host = add(live(1, "0"));
  host.record.memory_bytes = 1'000'000'000;
  cgroups_.apply(host, true);
  LiveJob guest = live(2, "2");
  guest.record.host = 1;
  guest.record.memory_bytes = 500'000'000;
  add(std::move(guest));
  cgroups_.apply(host, false);
  EXPECT_EQ(file(1, "cpuset.cpus"), "0,2");
  EXPECT_EQ(file(1, "memory.max"), "1500000000");
  std::deque<policy::JobPolicyOp> ops;
  policy::GrantScope scope;
  scope.cpus = 1;
  ASSERT_TRUE(host.policy.grant("pw", policy::Action{1, policy::ActionKind::kCpuWeight, 777}, scope, ops));
  cgroups_.refresh(host);
  EXPECT_EQ(file(1, "cpu.weight"), "777");
}

TEST_F(JobCgroupsTest, WithoutADriverNothingIsMadeAndNoCgroupIsNamed) {
  JobCgroups none{nullptr, topology_, weights_, book_, jobs_};
  LiveJob& j = add(live(1, "0"));
  none.apply(j, true);
  none.refresh(j);
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(j.weight, 0u);
  EXPECT_EQ(none.cgroup_of(j), "");
  EXPECT_FALSE(fs_->exists("mlos/job-1"));
}

TEST(JobStatusTest, ASocketJobsPhasesAndItsOwnCgroupsUsageAreInItsSample) {
  LiveJob j = live(3, "1-2");
  j.record.memory_bytes = 4096;
  j.record.origin_cgroup = "/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/abcdef0123";
  EXPECT_FALSE(phase_snapshot(j, 1000).has_value()) << "no phase marked yet";
  j.explicit_profile.enter(MLOS_TRAINING_PHASE_FORWARD, 1'000'000'000);
  j.marked = true;
  os::CgroupUsage usage;
  usage.cpu_usage_ns = 2'500'000'000;
  usage.memory_bytes = 1024;
  const JobSample s = sample_job(j, 3'000'000'000, usage);
  EXPECT_EQ(s.job_id, 3u);
  EXPECT_EQ(s.cpus, 2);
  EXPECT_EQ(s.phase, MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_DOUBLE_EQ(s.phase_seconds[MLOS_TRAINING_PHASE_FORWARD], 2.0);
  EXPECT_DOUBLE_EQ(*s.cpu_seconds, 2.5);
  EXPECT_EQ(*s.memory_bytes, 1024u);
  EXPECT_EQ(*s.memory_limit_bytes, 4096u);
  EXPECT_EQ(s.pod_uid, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b") << "from its origin cgroup";
  const json entry = job_status_json(j, s, "job-3", {"phase-weights"}, json{{"threads", 2}});
  EXPECT_EQ(entry["phase"], "FORWARD");
  EXPECT_EQ(entry["phase_source"], "socket");
  EXPECT_EQ(entry["cgroup"], "job-3");
  EXPECT_EQ(entry["policies"], json::array({"phase-weights"}));
  EXPECT_EQ(entry["cpu_seconds"], 2.5);
  EXPECT_TRUE(entry["nested_in"].is_null());
  EXPECT_TRUE(entry["policy_report"].is_null());
  // Without usage (no cgroup of its own), the figures are unknown, not 0.
  const json bare = job_status_json(j, sample_job(j, 3'000'000'000, std::nullopt), "", {}, json::object());
  EXPECT_TRUE(bare["cpu_seconds"].is_null());
  EXPECT_TRUE(bare["memory_used_bytes"].is_null());
}

TEST(JobStatusTest, GpusShowWhoHoldsThem) {
  Topology t = make_uniform_topology(1, 2, 1);
  t.gpus.resize(2);
  t.gpus[0].uuid = "GPU-a";
  t.gpus[1].uuid = "GPU-b";
  GpuUsage held;
  held.add({"GPU-a"}, true, +1);
  held.add({"GPU-b"}, false, +1);
  held.add({"GPU-b"}, false, +1);
  const json gpus = gpus_status_json(t, held);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["exclusive"], true);
  EXPECT_EQ(gpus[1]["exclusive"], false);
  EXPECT_EQ(gpus[1]["shared_claims"], 2);
}

TEST(JobMemoryWatchesTest, WatchMemorysArgumentsAreReadStrictly) {
  auto ok = JobMemoryWatches::parse({{"op", "watch_memory"}, {"id", 1}, {"job", 4}, {"event_fd", 9}});
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  EXPECT_EQ(ok->job, 4u);
  EXPECT_EQ(ok->owner_fd, 9);
  EXPECT_TRUE(ok->thresholds.is_null());
  for (const json& bad : {json::array(), json{{"job", 4}}, json{{"job", 4}, {"event_fd", -1}},
                          json{{"job", -4}, {"event_fd", 3}}, json{{"job", 4}, {"event_fd", 3}, {"nosuch", 1}},
                          json{{"job", 4}, {"event_fd", "3"}}}) {
    auto r = JobMemoryWatches::parse(bad);
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT) << bad.dump();
    EXPECT_EQ(r.error().message.rfind("watch_memory: ", 0), 0u) << r.error().message;
  }
}

}  // namespace
}  // namespace mlos::daemon
