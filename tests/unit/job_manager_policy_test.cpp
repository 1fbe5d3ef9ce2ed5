// SPDX-License-Identifier: Apache-2.0
// JobManager's side of policy modules without any host process: the
// callbacks PolicyHosts would call (apply, reset) are taken from the
// manager and called directly, so the grant checks and the taking back of
// a failed policy's effects are tested alone. The hosts themselves are
// tested with real processes in tests/policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "daemon/job_manager.h"
#include "daemon/registry_store.h"
#include "fakes/fake_cgroup_v2_fs.h"
#include "os/cgroup/cgroup_driver.h"
#include "core/topology.h"

namespace mlos::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using policy::Action;
using policy::ActionKind;

// A v2 driver that says it is v1: what mlosd refuses on v1 alone.
class CallsItselfV1 final : public os::CgroupDriver {
 public:
  explicit CallsItselfV1(std::unique_ptr<os::CgroupDriver> d) : d_(std::move(d)) {}
  std::string version() const override { return "v1"; }
  Status create(const std::string& job) override { return d_->create(job); }
  Status apply(const std::string& job, const os::CgroupLimits& l, std::vector<std::string>* unsupported) override {
    return d_->apply(job, l, unsupported);
  }
  Status set_cpu_weight(const std::string& job, uint32_t w) override { return d_->set_cpu_weight(job, w); }
  Status attach(const std::string& job, pid_t pid) override { return d_->attach(job, pid); }
  Status detach(const std::string& job, const std::string& origin) override { return d_->detach(job, origin); }
  Result<std::vector<pid_t>> processes(const std::string& job) const override { return d_->processes(job); }
  Result<os::CgroupUsage> usage(const std::string& job) const override { return d_->usage(job); }
  Status remove(const std::string& job) override { return d_->remove(job); }
  Result<std::vector<std::string>> jobs() const override { return d_->jobs(); }

 private:
  std::unique_ptr<os::CgroupDriver> d_;
};

class JobManagerPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-jobpolicy-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    start(os::make_cgroup_v2_driver(cgroupfs_, "mlos"));
  }
  // A new manager (state in the same directory) over `cgroups`.
  void start(std::unique_ptr<os::CgroupDriver> cgroups) {
    manager_.reset();
    JobManagerDeps d;
    d.topology = make_uniform_topology(1, 4, 1);  // CPUs 0-3, one core each
    d.allowed = d.topology.all_cpus();
    d.memory = [] { return MemoryAvailability{}; };
    d.cgroups = std::move(cgroups);
    d.state = std::make_shared<RegistryStore>(dir_.string());
    d.identify = [](pid_t pid) -> Result<ProcessId> { return ProcessId{pid, 7}; };
    d.is_alive = [](const ProcessId&) { return true; };
    d.peer_process = [](const os::PeerCredentials& p) -> Result<ProcessId> { return ProcessId{p.pid, 7}; };
    d.move_process = [](const std::string&, const ProcessId&, uid_t) { return Status::Ok(); };
    d.now_ns = [] { return uint64_t{1000}; };
    d.now_unix = [] { return int64_t{1700000000}; };
    d.quotas.exclusive_cpus_per_uid = 64;
    d.process_cpu_seconds = [this](pid_t) -> Result<double> { return static_cast<double>(++owner_cpu_reads_); };
    d.cpu_busy_seconds = [this](const CpuSet&) -> Result<double> { return static_cast<double>(++busy_reads_); };
    // A manager of hosts that can start none (no directory, no binary):
    // only its callbacks are wanted here.
    d.policy_hosts = [this](policy::PolicyHosts::Callbacks cb) {
      callbacks_ = cb;
      policy::PolicyHostsOptions o;
      o.host_binary = (dir_ / "no-host").string();
      o.policy_dir = (dir_ / "no-policies").string();
      return std::make_unique<policy::PolicyHosts>(o, std::move(cb));
    };
    manager_ = std::make_unique<JobManager>(std::move(d));
  }
  void TearDown() override {
    manager_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  uint64_t grant(int cpus, uint64_t memory_bytes = 0) {
    json args{{"num_cpus", cpus}};
    if (memory_bytes) args["memory_bytes"] = memory_bytes;
    auto r = manager_->request(os::PeerCredentials{100 + next_pid_++, 1000, 1000}, args, {});
    EXPECT_TRUE(r.ok()) << r.error().describe();
    return r.ok() ? (*r)["job"].get<uint64_t>() : 0;
  }
  json advice(uint64_t job) { return (*manager_->advice(job))["advice"]; }
  json status_of(uint64_t job) {
    const json status = manager_->status();
    for (const json& j : status["jobs"]) {
      if (j["job"] == job) return j;
    }
    return json();
  }

  fs::path dir_;
  std::shared_ptr<mlos_test::FakeCgroupV2Fs> cgroupfs_ =
      std::make_shared<mlos_test::FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "io", "memory"});
  policy::PolicyHosts::Callbacks callbacks_;
  std::unique_ptr<JobManager> manager_;
  int next_pid_ = 0;
  int owner_cpu_reads_ = 0, busy_reads_ = 0;  // readings the figures took
};

TEST_F(JobManagerPolicyTest, ThreadAdviceStaysWithinTheJobsCpus) {
  const uint64_t job = grant(2);
  EXPECT_EQ(advice(job)["threads"], 2);
  EXPECT_EQ(advice(job)["threads_advised"], false);
  ASSERT_TRUE(callbacks_.apply("gov", Action{job, ActionKind::kThreads, 1}).ok());
  EXPECT_EQ(advice(job)["threads"], 1);
  EXPECT_EQ(advice(job)["threads_by"], "gov");
  for (uint64_t bad : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 40}) {
    Status s = callbacks_.apply("gov", Action{job, ActionKind::kThreads, bad});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, MLOS_ERR_PERMISSION);
  }
  EXPECT_EQ(advice(job)["threads"], 1) << "a refused action changes nothing";
}

TEST_F(JobManagerPolicyTest, CpuWeightReachesTheCgroupAndIsTakenBackWithThePolicy) {
  const uint64_t job = grant(1);
  ASSERT_EQ(status_of(job)["cpu_weight"], 100) << "FORWARD's weight: nothing marked yet";
  ASSERT_TRUE(callbacks_.apply("pw", Action{job, ActionKind::kCpuWeight, 300}).ok());
  EXPECT_EQ(status_of(job)["cpu_weight"], 300);
  EXPECT_EQ(cgroupfs_->file("mlos/job-" + std::to_string(job) + "/cpu.weight").value_or(""), "300");
  EXPECT_EQ(advice(job)["cpu_weight_by"], "pw");
  // Another policy's failure leaves it; its own takes it back.
  callbacks_.reset("other", job);
  EXPECT_EQ(status_of(job)["cpu_weight"], 300);
  callbacks_.reset("pw", job);
  EXPECT_EQ(status_of(job)["cpu_weight"], 100);
  EXPECT_EQ(advice(job)["cpu_weight_by"], nullptr);
  for (uint64_t bad : {uint64_t{0}, uint64_t{10001}}) {
    EXPECT_FALSE(callbacks_.apply("pw", Action{job, ActionKind::kCpuWeight, bad}).ok()) << bad;
  }
}

TEST_F(JobManagerPolicyTest, MemorySettingsStayWithinTheJobsLimit) {
  const uint64_t limited = grant(1, 1'000'000'000), unlimited = grant(1);
  const std::string high = "mlos/job-" + std::to_string(limited) + "/memory.high";
  ASSERT_TRUE(callbacks_.apply("m", Action{limited, ActionKind::kMemoryHigh, 500'000'000}).ok());
  EXPECT_EQ(cgroupfs_->file(high).value_or(""), "500000000");
  Status over = callbacks_.apply("m", Action{limited, ActionKind::kMemoryHigh, 2'000'000'000});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, MLOS_ERR_PERMISSION);
  EXPECT_FALSE(callbacks_.apply("m", Action{unlimited, ActionKind::kMemoryLow, 1}).ok())
      << "no limit to stay within";
  callbacks_.reset("m", limited);
  EXPECT_EQ(cgroupfs_->file(high).value_or(""), "900000000") << "back to 90 % of the limit";
}

TEST_F(JobManagerPolicyTest, MemoryLowIsRefusedOnCgroupV1WhichCannotProtect) {
  start(std::make_unique<CallsItselfV1>(os::make_cgroup_v2_driver(cgroupfs_, "mlos")));
  const uint64_t job = grant(1, 1'000'000'000);
  Status low = callbacks_.apply("m", Action{job, ActionKind::kMemoryLow, 100'000'000});
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(low.error().message.find("v1"), std::string::npos) << low.error().message;
  EXPECT_TRUE(callbacks_.apply("m", Action{job, ActionKind::kMemoryHigh, 500'000'000}).ok()) << "v1 has a high mark";
}

TEST_F(JobManagerPolicyTest, UnsupportedAndUnknownTargetsAreRefused) {
  const uint64_t job = grant(1);
  Status io = callbacks_.apply("x", Action{job, ActionKind::kIoWeight, 100});
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_FALSE(callbacks_.apply("x", Action{job + 100, ActionKind::kThreads, 1}).ok());
  Status file = callbacks_.apply("x", Action{job, ActionKind::kFileAdvice, MLOS_POLICY_FILE_WILLNEED,
                                             (dir_ / "missing").string()});
  EXPECT_FALSE(file.ok());
}

// Reports and placement recommendations land in the job's status; what a
// policy may not do to the job's policies is refused before anything is
// queued; what it published goes when it leaves. (Attaching through real
// hosts: tests/python/test_policies.py, auto under mlosd.)
TEST_F(JobManagerPolicyTest, JobPolicyActionsAreCheckedAndShownInTheJobsStatus) {
  const uint64_t job = grant(1);
  EXPECT_EQ(status_of(job)["policy_report"], nullptr) << "nothing published yet";
  Action report{job, ActionKind::kReport};
  report.payload = R"({"class": "compute-bound"})";
  ASSERT_TRUE(callbacks_.apply("auto", report).ok());
  Action placement{job, ActionKind::kRecommendPlacement, MLOS_POLICY_PLACEMENT_EXCLUSIVE};
  placement.payload = "contended";
  ASSERT_TRUE(callbacks_.apply("auto", placement).ok());
  json shown = status_of(job)["policy_report"];
  EXPECT_EQ(shown["reports"]["auto"]["class"], "compute-bound") << shown;
  EXPECT_EQ(shown["placement"], (json{{"recommended", "exclusive"}, {"by", "auto"}, {"reason", "contended"}}));

  Action itself{job, ActionKind::kRequestPolicy};
  itself.target = "auto";
  itself.payload = "{}";
  Status s = callbacks_.apply("auto", itself);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_PERMISSION);
  Action release{job, ActionKind::kReleasePolicy};
  release.target = "thread-governor";
  s = callbacks_.apply("auto", release);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_PERMISSION) << "auto did not attach it";
  Action bad_report{job, ActionKind::kReport};
  bad_report.payload = "[1]";
  EXPECT_EQ(callbacks_.apply("auto", bad_report).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of(job)["policy_report"], shown) << "refusals change nothing";

  callbacks_.reset("other", job);
  EXPECT_EQ(status_of(job)["policy_report"], shown);
  callbacks_.reset("auto", job);
  EXPECT_EQ(status_of(job)["policy_report"], nullptr) << "its report and placement go with it";
}

// What policies publish makes a job several KiB in the status reply: a
// page ends before its jobs pass kStatusPageBytes (one reply frame holds
// 1 MiB), and following next_after still lists every job once.
TEST_F(JobManagerPolicyTest, AStatusPageFitsOneReplyFrameWhateverItsJobsPublished) {
  constexpr size_t kJobs = 200;
  Action big{0, ActionKind::kReport};
  big.payload = json{{"blob", std::string(4000, 'x')}}.dump();
  for (size_t i = 0; i < kJobs; ++i) {
    big.job = grant(1);
    ASSERT_TRUE(callbacks_.apply("auto", big).ok());
  }
  json page = manager_->status();
  ASSERT_LT(page["jobs"].size(), kJobs) << "200 jobs of 4 KiB do not fit one page";
  EXPECT_LE(page["jobs"].dump().size(), JobManager::kStatusPageBytes);
  std::set<uint64_t> seen;
  for (;;) {
    for (const json& j : page["jobs"]) EXPECT_TRUE(seen.insert(j["job"].get<uint64_t>()).second);
    if (page["next_after"].is_null()) break;
    page = manager_->status(page["next_after"].get<uint64_t>());
  }
  EXPECT_EQ(seen.size(), kJobs);
}

TEST_F(JobManagerPolicyTest, ARequestWithAPolicyThatCannotAttachGrantsNothing) {
  auto r = manager_->request(os::PeerCredentials{200, 1000, 1000},
                             json{{"num_cpus", 1}, {"policies", {{"nope", json::object()}}}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(r.error().message.find("nope"), std::string::npos) << r.error().message;
  EXPECT_EQ(manager_->status()["total_jobs"], 0);
  auto bad = manager_->request(os::PeerCredentials{201, 1000, 1000},
                               json{{"num_cpus", 1}, {"policies", {{"nope", 1}}}}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
}

TEST_F(JobManagerPolicyTest, FiguresDescribeTheJob) {
  const uint64_t job = grant(2, 1'000'000'000);
  auto f = callbacks_.figures(job);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->job, job);
  EXPECT_EQ(f->num_cpus, 2);
  EXPECT_EQ(f->recommended_threads, 2);
  EXPECT_EQ(f->memory_limit_bytes, 1'000'000'000u);
  EXPECT_EQ(f->phase, MLOS_TRAINING_PHASE_IDLE);
  EXPECT_FALSE(callbacks_.figures(job + 1).has_value());
}

// The soak (bench/daemon_scale.py, issue 47) found a tick of two policies
// over 2,000 jobs spending 64 % of the event loop re-reading the same
// files: readings are now shared within a loop turn.
TEST_F(JobManagerPolicyTest, FiguresOfOneTurnShareTheirOwnersAndCpusReadings) {
  const os::PeerCredentials owner{300, 1000, 1000};
  std::vector<uint64_t> jobs;
  for (int i = 0; i < 3; ++i) {
    auto r = manager_->request(owner, json{{"num_cpus", 4}}, {});  // one process, the same CPUs
    ASSERT_TRUE(r.ok()) << r.error().describe();
    jobs.push_back((*r)["job"]);
  }
  manager_->tick();  // a new turn
  owner_cpu_reads_ = busy_reads_ = 0;
  for (int policy = 0; policy < 2; ++policy) {
    for (uint64_t job : jobs) ASSERT_TRUE(callbacks_.figures(job).has_value());
  }
  EXPECT_EQ(owner_cpu_reads_, 1) << "one owner, read once for 6 figures";
  EXPECT_EQ(busy_reads_, 1) << "one set of CPUs, read once";
  EXPECT_EQ(callbacks_.figures(jobs[0])->owner_cpu_seconds, 1.0);
  manager_->tick();  // the next turn reads afresh
  EXPECT_EQ(callbacks_.figures(jobs[0])->owner_cpu_seconds, 2.0);
}

}  // namespace
}  // namespace mlos::daemon
