// SPDX-License-Identifier: Apache-2.0
// mlosd's job logic (daemon/job_manager) with every dependency injected: a
// synthetic 2-node topology, the cgroup v2 driver over an in-memory cgroupfs
// that enforces the kernel's rules, the registry file in a temp directory,
// and processes, uids and the clock faked from maps the tests control.
#include "daemon/job_manager.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/phase_page.h"
#include "core/topology.h"
#include "daemon/job_registry.h"
#include "fakes/fake_cgroup_v2_fs.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/checked_json_file.h"
#include "os/monotonic_clock.h"
#include "os/shared_page.h"

namespace mlos::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using mlos_test::FakeCgroupV2Fs;

constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 2000;
constexpr uint64_t kGigabyte = 1'000'000'000;  // divisible by 10: memory.high is exact

// A process the fakes know about: identify() gives {pid, start_time},
// is_alive() is true while `alive` and the start time still matches.
struct FakeProcess {
  uint64_t start_time = 0;
  uid_t uid = 0;
  bool alive = true;
};

// A phase page as a client holds it: the writable mapping and its writer.
struct ClientPage {
  os::SharedPage page;
  PhasePageWriter writer;
};

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-jobmanager-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    state_ = std::make_shared<RegistryStore>(dir_.string());
    cgroups_ = os::make_cgroup_v2_driver(cgroupfs_, "mlos");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A running process `pid` of `uid`, started at a time derived from its pid.
  os::PeerCredentials spawn(pid_t pid, uid_t uid) {
    processes_[pid] = FakeProcess{static_cast<uint64_t>(pid) * 10 + 7, uid, true};
    return os::PeerCredentials{pid, uid, uid};
  }

  JobManagerDeps deps() {
    JobManagerDeps d;
    d.topology = make_uniform_topology(2, 4, 1);  // CPUs 0-3 on node 0, 4-7 on node 1
    d.allowed = d.topology.all_cpus();
    d.memory = [] { return MemoryAvailability{}; };
    d.cgroups = cgroups_;
    d.state = state_;
    d.identify = [this](pid_t pid) -> Result<ProcessId> {
      auto it = processes_.find(pid);
      if (it == processes_.end() || !it->second.alive) return make_sys_error(ESRCH, "no process " + std::to_string(pid));
      return ProcessId{pid, it->second.start_time};
    };
    d.is_alive = [this](const ProcessId& id) {
      auto it = processes_.find(id.pid);
      return it != processes_.end() && it->second.alive && it->second.start_time == id.start_time;
    };
    // The connecting process, as the server's pidfd would report it: gone
    // once it died, refused once it no longer runs as the peer's uid.
    d.peer_process = [this](const os::PeerCredentials& peer) -> Result<ProcessId> {
      auto it = processes_.find(peer.pid);
      if (it == processes_.end() || !it->second.alive) {
        return make_sys_error(ESRCH, "the connecting process exited", MLOS_ERR_NO_SUCH_THREAD);
      }
      if (peer.uid != 0 && it->second.uid != peer.uid) return make_error(MLOS_ERR_PERMISSION, "uid changed");
      return ProcessId{peer.pid, it->second.start_time};
    };
    d.move_process = [this](const std::string& cgroup, const ProcessId& target, uid_t requester) -> Status {
      auto it = processes_.find(target.pid);
      if (it == processes_.end() || !it->second.alive || it->second.start_time != target.start_time) {
        return make_sys_error(ESRCH, "no process " + std::to_string(target.pid), MLOS_ERR_NO_SUCH_THREAD);
      }
      if (requester != 0 && it->second.uid != requester) return make_error(MLOS_ERR_PERMISSION, "not yours");
      moves_.push_back(target.pid);
      return cgroups_->attach(cgroup, target.pid);
    };
    d.fetch_fd = [this](const ProcessId& owner, int fd) -> Result<os::UniqueFd> {
      auto it = client_fds_.find({owner.pid, fd});
      if (it == client_fds_.end()) return make_sys_error(EBADF, "no such descriptor");
      return os::UniqueFd(dup(it->second));
    };
    d.now_ns = clock_.clock();
    d.now_unix = [] { return int64_t{1700000000}; };
    // The job cgroup a process sits in, as /proc/<pid>/cgroup would say.
    d.job_of_process = [this](pid_t pid) -> std::optional<uint64_t> {
      auto at = cgroupfs_->pid_location(pid);
      if (!at || at->rfind("mlos/job-", 0) != 0) return std::nullopt;
      return std::stoull(at->substr(9));
    };
    // Quotas out of the way except where a test is about them
    // (JobManagerQuotaTest starts from the defaults).
    d.quotas.exclusive_cpus_per_uid = 1 << 16;
    return d;
  }

  std::unique_ptr<JobManager> make_manager() { return std::make_unique<JobManager>(deps()); }

  // A phase page for a client; publish() through the returned writer.
  std::unique_ptr<ClientPage> make_page() {
    auto page = os::SharedPage::create("t");
    EXPECT_TRUE(page.ok());
    void* data = page->data();
    return std::unique_ptr<ClientPage>(new ClientPage{std::move(*page), PhasePageWriter(data, clock_.now_ns())});
  }

  // Requests a job for `peer` passing `page` the way the control server does:
  // a duplicate of the client's descriptor plus its number in the args.
  Result<json> request_with_page(JobManager& m, const os::PeerCredentials& peer, json args, const ClientPage& page) {
    const int client_fd = page.page.fd();
    args["page_fd"] = client_fd;
    client_fds_[{peer.pid, client_fd}] = client_fd;  // what pidfd_getfd would fetch after a restart
    return m.request(peer, args, os::UniqueFd(dup(client_fd)));
  }

  // The registry file as a restarted daemon would read it.
  JobRegistry saved_registry() {
    auto loaded = RegistryStore(dir_.string()).load();
    EXPECT_TRUE(loaded.ok()) << loaded.error().describe();
    if (!loaded.ok() || !loaded->has_value()) return {};
    return **loaded;
  }
  std::vector<uint64_t> saved_ids() {
    std::vector<uint64_t> ids;
    for (const auto& r : saved_registry().jobs) ids.push_back(r.id);
    return ids;
  }

  std::optional<std::string> cgroup_file(uint64_t job, const std::string& name) const {
    return cgroupfs_->file("mlos/job-" + std::to_string(job) + "/" + name);
  }
  bool cgroup_exists(uint64_t job) const { return cgroupfs_->exists("mlos/job-" + std::to_string(job)); }

  static json find_job(const json& status, uint64_t id) {
    for (const auto& j : status["jobs"]) {
      if (j["job"] == id) return j;
    }
    return nullptr;
  }

  // The journal: where a registry's changes go until it is compacted.
  std::string file_bytes() const {
    std::ifstream in(state_->journal_path(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
  std::shared_ptr<FakeCgroupV2Fs> cgroupfs_ =
      std::make_shared<FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "io", "memory"});
  std::shared_ptr<os::CgroupDriver> cgroups_;
  std::shared_ptr<RegistryStore> state_;
  std::map<pid_t, FakeProcess> processes_;
  std::vector<pid_t> moves_;  // pids move_process moved, in order
  std::map<std::pair<pid_t, int>, int> client_fds_;
  os::ManualClock clock_{5'000'000'000};
};

// ---- granting CPUs ----

TEST_F(JobManagerTest, ExclusiveJobsGetDisjointCpusAndLeaveTheSharedPool) {
  auto m = make_manager();
  auto a = m->request(spawn(101, kAlice), {{"num_cpus", 3}, {"exclusive", true}}, {});
  auto b = m->request(spawn(102, kAlice), {{"num_cpus", 3}, {"exclusive", true}}, {});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  ASSERT_TRUE(b.ok()) << b.error().describe();
  const CpuSet cpus_a = *CpuSet::parse_list((*a)["cpus"].get<std::string>());
  const CpuSet cpus_b = *CpuSet::parse_list((*b)["cpus"].get<std::string>());
  EXPECT_EQ(cpus_a.count(), 3);
  EXPECT_EQ(cpus_b.count(), 3);
  EXPECT_EQ(cpus_a.minus(cpus_b), cpus_a) << "overlap: " << cpus_a.to_list() << " / " << cpus_b.to_list();

  const json st = m->status();
  EXPECT_EQ(st["exclusive_cpus"], (cpus_a | cpus_b).to_list());
  EXPECT_EQ(st["shared_pool"], CpuSet::parse_list("0-7")->minus(cpus_a | cpus_b).to_list());
}

TEST_F(JobManagerTest, StatusAndSamplesCarryTheCgroupsUsageAndMemoryStall) {
  auto m = make_manager();
  auto a = m->request(spawn(101, kAlice), {{"num_cpus", 1}, {"memory_bytes", 1 << 20}}, {});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  const std::string dir = "mlos/" + (*a)["cgroup"].get<std::string>();
  cgroupfs_->set_memory_stall_usec(dir, 2500000);
  cgroupfs_->set_cpu_usage_usec(dir, 750000);
  cgroupfs_->set_memory_current(dir, 4096);
  const json job = m->status()["jobs"][0];
  EXPECT_DOUBLE_EQ(job["memory_stall_seconds"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(job["cpu_seconds"].get<double>(), 0.75);
  EXPECT_EQ(job["memory_used_bytes"], 4096);
  const auto samples = m->samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].memory_stall_seconds, std::optional<double>(2.5));
  EXPECT_EQ(samples[0].memory_limit_bytes, std::optional<uint64_t>(1 << 20));
}

TEST_F(JobManagerTest, ExclusiveRequestThatDoesNotFitIsBusyAndNotSaved) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 3}, {"exclusive", true}}, {}).ok());
  ASSERT_TRUE(m->request(spawn(102, kAlice), {{"num_cpus", 3}, {"exclusive", true}}, {}).ok());

  auto c = m->request(spawn(103, kAlice), {{"num_cpus", 4}, {"exclusive", true}}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, MLOS_ERR_CPUS_BUSY) << c.error().describe();
  EXPECT_EQ(m->status()["jobs"].size(), 2u);
  EXPECT_FALSE(cgroup_exists(3));
  const JobRegistry saved = saved_registry();
  EXPECT_EQ(saved.jobs.size(), 2u);
  EXPECT_EQ(saved.next_id, 3u) << "a refused request must not use up a job id";
}

TEST_F(JobManagerTest, SharedJobsMayOverlapButNotExclusiveCpus) {
  auto m = make_manager();
  auto excl = m->request(spawn(101, kAlice), {{"num_cpus", 6}, {"exclusive", true}}, {});
  ASSERT_TRUE(excl.ok()) << excl.error().describe();
  auto shared = m->request(spawn(102, kAlice), {{"num_cpus", 2}}, {});
  ASSERT_TRUE(shared.ok()) << shared.error().describe();
  const CpuSet e = *CpuSet::parse_list((*excl)["cpus"].get<std::string>());
  const CpuSet s = *CpuSet::parse_list((*shared)["cpus"].get<std::string>());
  EXPECT_EQ(s.minus(e), s) << "shared job placed on exclusive CPUs " << s.to_list();
}

// ---- cgroups ----

TEST_F(JobManagerTest, EachJobGetsItsOwnCgroupWithItsCpusPidAndMemoryLimits) {
  auto m = make_manager();
  auto a = m->request(spawn(101, kAlice), {{"num_cpus", 2}, {"memory_bytes", kGigabyte}}, {});
  auto b = m->request(spawn(102, kBob), {{"num_cpus", 3}, {"exclusive", true}}, {});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  ASSERT_TRUE(b.ok()) << b.error().describe();
  EXPECT_EQ((*a)["cgroup"], "job-1");
  EXPECT_EQ((*b)["cgroup"], "job-2");

  EXPECT_EQ(cgroup_file(1, "cpuset.cpus"), (*a)["cpus"].get<std::string>());
  EXPECT_EQ(cgroup_file(1, "cpuset.mems"), (*a)["mems"].get<std::string>());
  EXPECT_EQ(cgroup_file(1, "cgroup.procs"), "101");
  EXPECT_EQ(cgroup_file(1, "memory.max"), "1000000000");
  EXPECT_EQ(cgroup_file(1, "memory.high"), "900000000");
  EXPECT_EQ(cgroup_file(1, "memory.low"), "0");

  EXPECT_EQ(cgroup_file(2, "cpuset.cpus"), (*b)["cpus"].get<std::string>());
  EXPECT_EQ(cgroup_file(2, "cgroup.procs"), "102");
  EXPECT_EQ(cgroup_file(2, "memory.max"), "max") << "no memory_bytes: no limit";
  EXPECT_EQ(cgroup_file(2, "memory.high"), "max");
}

// Origins: where /proc/<pid>/cgroup would say a process is, and the CPUs
// an effective cpuset gives the cgroups under kubepods.slice (5-6).
JobManagerDeps with_origins(JobManagerDeps d, std::shared_ptr<FakeCgroupV2Fs> fs) {
  d.cgroup_of = [fs](pid_t pid) -> std::optional<std::string> {
    auto at = fs->pid_location(pid);
    if (!at) return std::nullopt;
    return "/" + *at;
  };
  d.cgroup_cpus = [](const std::string& path) -> std::optional<CpuSet> {
    if (path.rfind("/kubepods.slice", 0) == 0) return CpuSet::of({5, 6});
    return std::nullopt;
  };
  d.stay_in_cgroups = {"kubepods.slice"};
  return d;
}

TEST_F(JobManagerTest, AReleasedJobsProcessGoesBackToTheCgroupItCameFromEvenAfterARestart) {
  ASSERT_TRUE(cgroupfs_->make_dir("user.slice"));
  ASSERT_TRUE(cgroupfs_->make_dir("user.slice/session-1.scope"));
  auto alice = spawn(101, kAlice);
  cgroupfs_->set_processes("user.slice/session-1.scope", {101});
  {
    JobManager m(with_origins(deps(), cgroupfs_));
    ASSERT_TRUE(m.request(alice, {{"num_cpus", 2}}, {}).ok());
    EXPECT_EQ(cgroupfs_->pid_location(101), "mlos/job-1");
  }
  JobManager restarted(with_origins(deps(), cgroupfs_));
  ASSERT_TRUE(restarted.recover().ok());
  ASSERT_TRUE(restarted.release(alice, 1));
  EXPECT_EQ(cgroupfs_->pid_location(101), "user.slice/session-1.scope");
  EXPECT_FALSE(cgroup_exists(1));
}

TEST_F(JobManagerTest, AJobInAnotherManagersCgroupStaysThereAndInsideItsCpuset) {
  ASSERT_TRUE(cgroupfs_->make_dir("kubepods.slice"));
  ASSERT_TRUE(cgroupfs_->make_dir("kubepods.slice/pod1"));
  auto pod = spawn(301, kAlice);
  cgroupfs_->set_processes("kubepods.slice/pod1", {301});
  JobManager m(with_origins(deps(), cgroupfs_));
  // The client claims every CPU; the pod's cpuset (5-6) bounds it anyway.
  auto a = m.request(pod, {{"num_cpus", 2}, {"exclusive", true}, {"allowed_cpus", "0-7"}}, {});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ((*a)["cpus"], "5-6");
  EXPECT_EQ(cgroupfs_->pid_location(301), "kubepods.slice/pod1");
  EXPECT_TRUE(moves_.empty());
  EXPECT_FALSE(cgroup_exists(1));
  const json job = find_job(m.status(), 1);
  EXPECT_NE(job["notes"].dump().find("stays in /kubepods.slice/pod1"), std::string::npos) << job.dump();
  // Another process of the pod asking for more than the pod has left.
  auto other = spawn(302, kAlice);
  cgroupfs_->set_processes("kubepods.slice/pod1", {301, 302});
  auto too_many = m.request(other, {{"num_cpus", 1}, {"exclusive", true}}, {});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, MLOS_ERR_CPUS_BUSY);  // the pod's two CPUs are held
  // Released: nothing to move back, nothing to remove.
  ASSERT_TRUE(m.release(pod, 1));
  EXPECT_EQ(cgroupfs_->pid_location(301), "kubepods.slice/pod1");
  EXPECT_TRUE(moves_.empty());
}

TEST_F(JobManagerTest, SecondJobOfTheSameProcessSharesItsCgroupMembership) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  auto second = m->request(alice, {{"num_cpus", 1}}, {});
  ASSERT_TRUE(second.ok()) << second.error().describe();
  EXPECT_EQ(cgroup_file(1, "cgroup.procs"), "101");
  EXPECT_FALSE(cgroup_exists(2)) << "a guest lives in its host's cgroup";
  ASSERT_EQ((*second)["notes"].size(), 1u);
  EXPECT_NE((*second)["notes"][0].get<std::string>().find("job-1"), std::string::npos);
}

// ---- phases and CPU weights ----

TEST_F(JobManagerTest, UnmarkedJobGetsForwardWeightScaledByPriority) {
  auto m = make_manager();
  auto page = make_page();
  auto r = request_with_page(*m, spawn(101, kAlice), {{"num_cpus", 1}, {"priority", 5}}, *page);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "150");  // 100 * (100 + 10*5) / 100
  const json job = find_job(m->status(), 1);
  EXPECT_EQ(job["phase"], "UNMARKED");
  EXPECT_EQ(job["cpu_weight"], 150);
}

TEST_F(JobManagerTest, UnmarkedJobWithDefaultPriorityGetsWeight100) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  m->tick();
  EXPECT_EQ(find_job(m->status(), 1)["cpu_weight"], 100);
  // Written, not just the kernel's default.
  bool wrote_weight = false;
  for (const auto& [path, value] : cgroupfs_->writes()) {
    if (path == "mlos/job-1/cpu.weight" && value == "100") wrote_weight = true;
  }
  EXPECT_TRUE(wrote_weight);
}

TEST_F(JobManagerTest, PagePhaseFollowedOnTick) {
  auto m = make_manager();
  auto page = make_page();
  ASSERT_TRUE(request_with_page(*m, spawn(101, kAlice), {{"num_cpus", 1}}, *page).ok());
  EXPECT_EQ(find_job(m->status(), 1)["phase_source"], "page");

  page->writer.publish(MLOS_TRAINING_PHASE_BACKWARD, clock_.advance_ns(1000));
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "100") << "nothing changes before the tick";
  EXPECT_TRUE(m->tick().empty());
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "200");
  EXPECT_EQ(find_job(m->status(), 1)["phase"], "BACKWARD");

  page->writer.publish(MLOS_TRAINING_PHASE_DATA_LOADING, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "50");
  page->writer.publish(MLOS_TRAINING_PHASE_IDLE, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "10");
}

TEST_F(JobManagerTest, PhaseWeightIsScaledByPriority) {
  auto m = make_manager();
  auto page = make_page();
  ASSERT_TRUE(request_with_page(*m, spawn(101, kAlice), {{"num_cpus", 1}, {"priority", -5}}, *page).ok());
  page->writer.publish(MLOS_TRAINING_PHASE_CHECKPOINT, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "200");  // 400 * (100 - 50) / 100
}

TEST_F(JobManagerTest, CheckpointProtectsMemoryAndLeavingItResetsProtection) {
  auto m = make_manager();
  auto page = make_page();
  ASSERT_TRUE(request_with_page(*m, spawn(101, kAlice), {{"num_cpus", 1}, {"memory_bytes", kGigabyte}}, *page).ok());
  EXPECT_EQ(cgroup_file(1, "memory.low"), "0");

  page->writer.publish(MLOS_TRAINING_PHASE_CHECKPOINT, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "400");
  EXPECT_EQ(cgroup_file(1, "memory.low"), "1000000000");

  page->writer.publish(MLOS_TRAINING_PHASE_FORWARD, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "100");
  EXPECT_EQ(cgroup_file(1, "memory.low"), "0");
  EXPECT_EQ(cgroup_file(1, "memory.max"), "1000000000") << "the hard limit stays";
}

TEST_F(JobManagerTest, JobWithoutPageTakesPhasesOverTheSocket) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->set_phase(alice, 1, MLOS_TRAINING_PHASE_BACKWARD));
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "200") << "applied at once, no tick needed";
  const json job = find_job(m->status(), 1);
  EXPECT_EQ(job["phase"], "BACKWARD");
  EXPECT_EQ(job["phase_source"], "socket");
  EXPECT_EQ(job["phase_entries"]["BACKWARD"], 1);
}

TEST_F(JobManagerTest, SetPhaseRejectsUnknownPhase) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  Status s = m->set_phase(alice, 1, MLOS_TRAINING_PHASE_COUNT);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(find_job(m->status(), 1)["phase"], "UNMARKED");
}

TEST_F(JobManagerTest, SetPhaseOnJobWithPageIsInvalidArgument) {
  auto m = make_manager();
  auto page = make_page();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(request_with_page(*m, alice, {{"num_cpus", 1}}, *page).ok());
  Status s = m->set_phase(alice, 1, MLOS_TRAINING_PHASE_CHECKPOINT);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "100");
}

// ---- authorisation ----

TEST_F(JobManagerTest, AnotherUidMayNotChangeOrReleaseAJob) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  const auto bob = spawn(201, kBob);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());

  Status released = m->release(bob, 1);
  Status phased = m->set_phase(bob, 1, MLOS_TRAINING_PHASE_CHECKPOINT);
  Status attached = m->attach(bob, 1, 201);
  ASSERT_FALSE(released.ok());
  ASSERT_FALSE(phased.ok());
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(released.error().code, MLOS_ERR_PERMISSION);
  EXPECT_EQ(phased.error().code, MLOS_ERR_PERMISSION);
  EXPECT_EQ(attached.error().code, MLOS_ERR_PERMISSION);

  const json job = find_job(m->status(), 1);
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["phase"], "UNMARKED");
  EXPECT_TRUE(cgroup_exists(1));
  EXPECT_EQ(cgroup_file(1, "cgroup.procs"), "101");
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "100");
  EXPECT_EQ(saved_ids(), std::vector<uint64_t>{1});
}

TEST_F(JobManagerTest, RootMayReleaseAnyJob) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->release(spawn(1, 0), 1));
  EXPECT_TRUE(m->status()["jobs"].empty());
  EXPECT_FALSE(cgroup_exists(1));
  EXPECT_TRUE(saved_ids().empty());
  EXPECT_EQ(cgroupfs_->pid_location(101), "mlos/released") << "the owner is moved out before rmdir";
}

TEST_F(JobManagerTest, OwnerMayReleaseItsJob) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->release(alice, 1));
  EXPECT_FALSE(cgroup_exists(1));
  Status again = m->release(alice, 1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, MLOS_ERR_INVALID_HANDLE);
}

TEST_F(JobManagerTest, UnknownJobIsInvalidHandle) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  for (Status s : {m->release(alice, 42), m->set_phase(alice, 42, MLOS_TRAINING_PHASE_FORWARD),
                   m->attach(alice, 42, 101)}) {
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_HANDLE) << s.error().describe();
  }
  EXPECT_EQ(m->status()["jobs"].size(), 1u);
}

TEST_F(JobManagerTest, OwnerMayAttachItsOwnProcessButNotAnotherUidsOne) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  spawn(102, kAlice);
  spawn(201, kBob);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());

  ASSERT_TRUE(m->attach(alice, 1, 102));
  EXPECT_EQ(cgroupfs_->pid_location(102), "mlos/job-1");

  Status s = m->attach(alice, 1, 201);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_PERMISSION);
  EXPECT_NE(cgroupfs_->pid_location(201), "mlos/job-1");
}

// ---- liveness ----

TEST_F(JobManagerTest, TickPrunesJobsOfDeadOwners) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->request(spawn(102, kAlice), {{"num_cpus", 1}}, {}).ok());
  EXPECT_TRUE(m->tick().empty());

  processes_[101].alive = false;
  EXPECT_EQ(m->tick(), std::vector<uint64_t>{1});
  EXPECT_FALSE(cgroup_exists(1));
  EXPECT_TRUE(cgroup_exists(2));
  EXPECT_TRUE(find_job(m->status(), 1).is_null());
  EXPECT_EQ(saved_ids(), std::vector<uint64_t>{2});
}

TEST_F(JobManagerTest, ReusedPidDoesNotKeepAJobAlive) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  processes_[101].start_time += 1;  // the owner died, its pid went to a new process
  EXPECT_EQ(m->tick(), std::vector<uint64_t>{1});
  EXPECT_TRUE(saved_ids().empty());
}

TEST_F(JobManagerTest, OwnerExitedPrunesEveryJobOfThatOwnerAndNoOther) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->request(spawn(102, kAlice), {{"num_cpus", 1}}, {}).ok());
  processes_[101].alive = false;
  // The event loop's pidfd on 101 became readable: its jobs 1 and 2 go.
  EXPECT_EQ(m->owner_exited({1, 2, 99}), (std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(cgroup_exists(1));
  EXPECT_FALSE(cgroup_exists(2));
  EXPECT_EQ(saved_ids(), std::vector<uint64_t>{3});
}

TEST_F(JobManagerTest, AnOwnerOfManyJobsIsForgottenWithoutReHomingThemOntoEachOther) {
  // One process, one cgroup: its first job hosts the others. When it dies
  // they all go at once; none may be re-homed (its cgroup recreated, the
  // dead process moved) onto a job that goes too. Found by the soak: 250
  // such jobs took 4.3 s to forget, every client waiting.
  auto m = make_manager();
  const auto owner = spawn(101, kAlice);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) {
    auto r = m->request(owner, {{"num_cpus", 1}}, {});
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ids.push_back((*r)["job"]);
  }
  EXPECT_EQ(find_job(m->status(), ids[1])["host"], ids[0]);
  auto lines = [this] {
    const std::string journal = file_bytes();
    return std::count(journal.begin(), journal.end(), '\n');
  };
  const auto lines_before = lines();
  processes_[101].alive = false;
  EXPECT_EQ(m->owner_exited(ids).size(), ids.size());
  EXPECT_EQ(lines(), lines_before + 1) << "one removal recorded; no job re-homed (each would be a line)";
  for (uint64_t id : ids) EXPECT_FALSE(cgroup_exists(id)) << id;
  EXPECT_EQ(m->status()["total_jobs"], 0);
}

TEST_F(JobManagerTest, WatchedOwnersAreLeftToTheirPidfdExceptOnASweep) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->request(spawn(102, kAlice), {{"num_cpus", 1}}, {}).ok());
  m->set_owner_watched(1, true);
  processes_[101].alive = false;
  processes_[102].alive = false;
  EXPECT_EQ(m->tick(0), std::vector<uint64_t>{2});  // 1 is the pidfd's to report
  EXPECT_EQ(m->tick(1), std::vector<uint64_t>{1});  // the sweep gets round to it
}

TEST_F(JobManagerTest, TheSweepGoesRoundAFewOwnersPerTick) {
  auto m = make_manager();
  for (pid_t pid : {101, 102, 103}) ASSERT_TRUE(m->request(spawn(pid, kAlice), {{"num_cpus", 1}}, {}).ok());
  for (uint64_t job : {1, 2, 3}) m->set_owner_watched(job, true);
  for (pid_t pid : {101, 102, 103}) processes_[pid].alive = false;
  EXPECT_EQ(m->tick(1), std::vector<uint64_t>{1});
  EXPECT_EQ(m->tick(1), std::vector<uint64_t>{2});
  EXPECT_EQ(m->tick(1), std::vector<uint64_t>{3});
  EXPECT_TRUE(m->tick(1).empty());
}

// ---- the connecting process, not its old pid ----

TEST_F(JobManagerTest, ARequestFromAConnectionWhoseProcessExitedGrantsNothingAndMovesNothing) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  processes_[101].alive = false;  // e.g. it handed the connection to a child and exited
  auto r = m->request(alice, {{"num_cpus", 1}, {"exclusive", true}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, MLOS_ERR_NO_SUCH_THREAD);
  EXPECT_TRUE(moves_.empty());
  EXPECT_TRUE(m->status()["jobs"].empty());
  EXPECT_TRUE(m->holdings().empty());
}

TEST_F(JobManagerTest, ARequestFromAProcessThatNoLongerRunsAsThePeerIsRefused) {
  auto m = make_manager();
  auto alice = spawn(101, kAlice);
  processes_[101].uid = 0;  // it exec'd a setuid-root program after connecting
  auto r = m->request(alice, {{"num_cpus", 1}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, MLOS_ERR_PERMISSION);
  EXPECT_TRUE(moves_.empty());
}

TEST_F(JobManagerTest, TheJobIsOwnedByAndMovesTheProcessThatConnected) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  EXPECT_EQ(moves_, std::vector<pid_t>{101});
  EXPECT_EQ(find_job(m->status(), 1)["pid"], 101);
}

// ---- several jobs of one process, and jobs inside another's ----

TEST_F(JobManagerTest, ASecondJobOfAProcessWidensItsCgroupAndOutlivesTheFirst) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  auto first = m->request(alice, {{"num_cpus", 2}, {"exclusive", true}}, {});
  auto second = m->request(alice, {{"num_cpus", 2}, {"exclusive", true}}, {});
  ASSERT_TRUE(first.ok() && second.ok());
  const auto a = CpuSet::parse_list((*first)["cpus"].get<std::string>());
  const auto b = CpuSet::parse_list((*second)["cpus"].get<std::string>());
  EXPECT_FALSE(a->intersects(*b)) << "two allocations, not one carved from the other";
  // The process can run on both: its one cgroup covers both.
  EXPECT_EQ(cgroup_file(1, "cpuset.cpus"), (*a | *b).to_list());
  EXPECT_EQ((*second)["cgroup"], "job-1");
  EXPECT_FALSE(cgroup_exists(2));
  EXPECT_EQ(find_job(m->status(), 2)["host"], 1);
  // The first goes: the second takes the process into a cgroup of its own.
  ASSERT_TRUE(m->release(alice, 1));
  EXPECT_TRUE(cgroup_exists(2));
  EXPECT_EQ(cgroup_file(2, "cpuset.cpus"), b->to_list());
  EXPECT_EQ(cgroupfs_->pid_location(101), "mlos/job-2");
  EXPECT_TRUE(find_job(m->status(), 2)["host"].is_null());
  EXPECT_EQ(saved_registry().jobs.at(0).host, 0u);
}

TEST_F(JobManagerTest, AJobRequestedFromInsideAnothersCgroupIsCarvedFromIt) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  auto outer = m->request(alice, {{"num_cpus", 4}, {"exclusive", true}, {"numa_preference", 0}}, {});
  ASSERT_TRUE(outer.ok());
  const auto child = spawn(102, kAlice);  // e.g. the command `mlos run` started
  ASSERT_TRUE(m->attach(alice, 1, 102));
  auto inner = m->request(child, {{"num_cpus", 2}, {"exclusive", true}}, {});
  ASSERT_TRUE(inner.ok()) << inner.error().describe();
  const auto inner_cpus = CpuSet::parse_list((*inner)["cpus"].get<std::string>());
  EXPECT_TRUE(inner_cpus->is_subset_of(*CpuSet::parse_list((*outer)["cpus"].get<std::string>())));
  EXPECT_EQ((*inner)["cgroup"], "job-1");
  EXPECT_EQ(find_job(m->status(), 2)["nested_in"], 1);
  EXPECT_FALSE(cgroup_exists(2));
  // The node's pool did not pay twice: node 1's four CPUs are still free.
  EXPECT_TRUE(m->request(spawn(201, kBob), {{"num_cpus", 4}, {"exclusive", true}}, {}).ok());
  // Inside the envelope, nested jobs are arbitrated among themselves.
  auto too_many = m->request(child, {{"num_cpus", 3}, {"exclusive", true}}, {});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("nested in job 1"), std::string::npos) << too_many.error().message;
  // The envelope ends: the nested job stands on its own, with its cgroup.
  ASSERT_TRUE(m->release(alice, 1));
  EXPECT_TRUE(find_job(m->status(), 2)["nested_in"].is_null());
  EXPECT_TRUE(cgroup_exists(2));
  EXPECT_EQ(cgroupfs_->pid_location(102), "mlos/job-2");
  auto more = m->request(spawn(202, kBob), {{"num_cpus", 4}, {"exclusive", true}}, {});
  ASSERT_FALSE(more.ok()) << "job 2's CPUs are now booked against the node";
}

// ---- one book: envelopes, dry runs, the embedded ledger ----

TEST_F(JobManagerTest, AnEnvelopeOwnersOwnRequestNestsAndSteersTheEnvelopesCgroup) {
  auto m = make_manager();
  const auto run = spawn(101, kAlice);  // `mlos run`, which then execs the command (same process)
  auto outer = m->request(run, {{"num_cpus", 4}, {"envelope", true}, {"label", "train"}}, {});
  ASSERT_TRUE(outer.ok()) << outer.error().describe();
  EXPECT_EQ(cgroupfs_->pid_location(101), "mlos/job-1");
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "100") << "an unmarked envelope runs at normal weight";
  auto page = make_page();
  auto inner = request_with_page(*m, run, {{"num_cpus", 2}}, *page);
  ASSERT_TRUE(inner.ok()) << inner.error().describe();
  EXPECT_EQ(find_job(m->status(), 2)["nested_in"], 1) << "the owner's own request nests in its envelope";
  EXPECT_TRUE(find_job(m->status(), 2)["host"].is_null());
  EXPECT_EQ(find_job(m->status(), 1)["envelope"], true);
  EXPECT_EQ((*inner)["cgroup"], "job-1");
  EXPECT_FALSE(cgroup_exists(2));
  EXPECT_TRUE(CpuSet::parse_list((*inner)["cpus"].get<std::string>())
                  ->is_subset_of(*CpuSet::parse_list((*outer)["cpus"].get<std::string>())));
  // The command's phases reach every thread of it: through the envelope's cgroup.
  page->writer.publish(MLOS_TRAINING_PHASE_BACKWARD, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "200");
  page->writer.publish(MLOS_TRAINING_PHASE_IDLE, clock_.advance_ns(1000));
  m->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "10");
  // The nested job goes: the envelope is steered by nobody, normal again.
  ASSERT_TRUE(m->release(run, 2));
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "100");
  // The registry keeps the envelope flag for a restarted daemon.
  EXPECT_TRUE(saved_registry().jobs.at(0).envelope);
}

TEST_F(JobManagerTest, TheRequestersOwnCpusBoundItsPlacementNestedOrNot) {
  auto m = make_manager();
  const auto run = spawn(101, kAlice);
  ASSERT_TRUE(m->request(run, {{"num_cpus", 4}, {"envelope", true}, {"numa_preference", 1}}, {}).ok());  // 4-7
  // A local rank whose share of the envelope is CPU 6 (its affinity).
  auto rank = m->request(run, {{"num_cpus", 1}, {"allowed_cpus", "6"}}, {});
  ASSERT_TRUE(rank.ok()) << rank.error().describe();
  EXPECT_EQ((*rank)["cpus"], "6");
  EXPECT_EQ(find_job(m->status(), 2)["nested_in"], 1);
  // A process under taskset 0-1 is placed there, not anywhere on the node.
  auto pinned = m->request(spawn(201, kBob), {{"num_cpus", 2}, {"allowed_cpus", "0-1"}}, {});
  ASSERT_TRUE(pinned.ok()) << pinned.error().describe();
  EXPECT_EQ((*pinned)["cpus"], "0-1");
  // Outside the node, or not a CPU list: refused, naming the field.
  auto outside = m->request(spawn(202, kBob), {{"num_cpus", 1}, {"allowed_cpus", "64"}}, {});
  EXPECT_FALSE(outside.ok());
  auto bad = m->request(spawn(203, kBob), {{"num_cpus", 1}, {"allowed_cpus", "x"}}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.error().message.find("allowed_cpus"), std::string::npos) << bad.error().message;
}

TEST_F(JobManagerTest, WithoutCgroupsAnEnvelopeIsFoundThroughTheRequestersLineage) {
  JobManagerDeps d = deps();
  d.cgroups = nullptr;
  d.job_of_process = nullptr;
  d.lineage = [this](pid_t pid) {  // 102 is a child of 101
    std::vector<ProcessId> out{ProcessId{pid, processes_.at(pid).start_time}};
    if (pid == 102) out.push_back(ProcessId{101, processes_.at(101).start_time});
    return out;
  };
  JobManager m(std::move(d));
  const auto run = spawn(101, kAlice);
  ASSERT_TRUE(m.request(run, {{"num_cpus", 4}, {"exclusive", true}, {"envelope", true}}, {}).ok());
  auto worker = m.request(spawn(102, kAlice), {{"num_cpus", 2}, {"exclusive", true}}, {});  // a child of 101
  ASSERT_TRUE(worker.ok()) << worker.error().describe();
  EXPECT_EQ(find_job(m.status(), 2)["nested_in"], 1);
  // The node paid once: the other four CPUs are still free for an exclusive job.
  EXPECT_TRUE(m.request(spawn(201, kBob), {{"num_cpus", 4}, {"exclusive", true}}, {}).ok());
}

TEST_F(JobManagerTest, ADryRunPlansWithoutGrantingBookingOrSaving) {
  auto m = make_manager();
  ASSERT_TRUE(m->request(spawn(101, kAlice), {{"num_cpus", 3}, {"exclusive", true}}, {}).ok());
  auto plan = m->request(spawn(102, kAlice), {{"num_cpus", 2}, {"exclusive", true}, {"dry_run", true}}, {});
  ASSERT_TRUE(plan.ok()) << plan.error().describe();
  EXPECT_EQ((*plan)["dry_run"], true);
  const CpuSet planned = *CpuSet::parse_list((*plan)["cpus"].get<std::string>());
  EXPECT_EQ(planned.count(), 2);
  EXPECT_FALSE(planned.intersects(*CpuSet::parse_list(find_job(m->status(), 1)["cpus"].get<std::string>())));
  EXPECT_EQ(m->status()["jobs"].size(), 1u);
  EXPECT_EQ(saved_registry().jobs.size(), 1u);
  EXPECT_FALSE(cgroup_exists(2));
  EXPECT_TRUE(moves_.size() == 1 && moves_[0] == 101) << "a dry run moves nobody";
  // Refusals are planned too.
  auto no = m->request(spawn(103, kAlice), {{"num_cpus", 8}, {"exclusive", true}, {"dry_run", true}}, {});
  ASSERT_FALSE(no.ok());
  EXPECT_EQ(no.error().code, MLOS_ERR_CPUS_BUSY);
  EXPECT_EQ((*m->request(spawn(104, kAlice), {{"num_cpus", 1}}, {}))["job"], 2) << "no job id used up";
}

class JobManagerLedgerTest : public JobManagerTest {
 protected:
  // `gpus`: the node's claimable GPUs (none by default).
  std::unique_ptr<JobManager> make_following_manager(std::vector<Gpu> gpus = {}) {
    JobManagerDeps d = deps();
    d.topology.gpus = std::move(gpus);
    d.ledger_changes = [this]() -> std::optional<Result<ClaimLedger>> {
      if (!ledger_changed_) return std::nullopt;
      ledger_changed_ = false;
      return Result<ClaimLedger>(ledger_);
    };
    d.lineage = [this](pid_t pid) {
      std::vector<ProcessId> out{ProcessId{pid, processes_.at(pid).start_time}};
      if (auto p = parents_.find(pid); p != parents_.end()) {
        out.push_back(ProcessId{p->second, processes_.at(p->second).start_time});
      }
      return out;
    };
    return std::make_unique<JobManager>(std::move(d));
  }
  void add_claim(uint64_t id, pid_t pid, const char* cpus, bool exclusive, bool envelope, const char* label) {
    spawn(pid, kAlice);
    Claim c;
    c.id = id;
    c.owner = ProcessId{pid, processes_.at(pid).start_time};
    c.uid = kAlice;
    c.cpus = *CpuSet::parse_list(cpus);
    c.exclusive = exclusive;
    c.envelope = envelope;
    c.label = label;
    ledger_.claims.push_back(c);
    ledger_changed_ = true;
  }
  static json job_of_pid(const json& status, pid_t pid) {
    for (const auto& j : status["jobs"]) {
      if (j["pid"] == pid) return j;
    }
    return nullptr;
  }
  ClaimLedger ledger_;
  bool ledger_changed_ = false;
  std::map<pid_t, pid_t> parents_;
};

TEST_F(JobManagerLedgerTest, LiveLedgerClaimsAreAdoptedAtStartAndBookTheirCpus) {
  add_claim(5, 301, "0-1", true, false, "early");
  add_claim(6, 302, "4-7", false, true, "run");  // `mlos run` while mlosd was down
  add_claim(7, 303, "4-5", true, false, "inside");
  parents_[303] = 302;
  auto m = make_following_manager();
  auto report = m->recover();
  ASSERT_TRUE(report.ok()) << report.error().describe();
  const json st = m->status();
  const json early = job_of_pid(st, 301), run = job_of_pid(st, 302), inside = job_of_pid(st, 303);
  EXPECT_EQ(early["source"], "ledger");
  EXPECT_EQ(early["label"], "early");
  EXPECT_EQ(early["exclusive"], true);
  EXPECT_EQ(inside["nested_in"], run["job"]) << "claims made inside an envelope nest in it";
  EXPECT_FALSE(cgroup_exists(early["job"].get<uint64_t>())) << "adopted processes placed themselves";
  EXPECT_EQ(st["exclusive_cpus"], "0-1");
  // mlosd's own grants now avoid them.
  auto fresh = m->request(spawn(401, kBob), {{"num_cpus", 2}, {"exclusive", true}}, {});
  ASSERT_TRUE(fresh.ok()) << fresh.error().describe();
  EXPECT_EQ((*fresh)["cpus"], "2-3");
  // Saved: a restart knows them (and their claim ids).
  int adopted = 0;
  for (const auto& r : saved_registry().jobs) adopted += r.ledger_claim != 0;
  EXPECT_EQ(adopted, 3);
}

TEST_F(JobManagerLedgerTest, AClaimThatLeavesTheLedgerIsForgottenAndDuplicatesAreBookedShared) {
  auto m = make_following_manager();
  ASSERT_TRUE(m->recover().ok());
  ASSERT_TRUE(m->request(spawn(101, kBob), {{"num_cpus", 2}, {"exclusive", true}}, {}).ok());  // CPUs 0-1
  add_claim(9, 301, "1-2", true, false, "behind-its-back");
  m->tick();
  const json dup = job_of_pid(m->status(), 301);
  ASSERT_FALSE(dup.is_null());
  EXPECT_EQ(dup["exclusive"], false);
  EXPECT_NE(dup["notes"].dump().find("booked as shared"), std::string::npos) << dup.dump();
  m->tick();
  EXPECT_EQ(m->status()["jobs"].size(), 2u) << "an unchanged ledger adopts nothing twice";
  ledger_.claims.clear();
  ledger_changed_ = true;
  m->tick();
  EXPECT_TRUE(job_of_pid(m->status(), 301).is_null());
  EXPECT_EQ(saved_registry().jobs.size(), 1u);
  EXPECT_EQ(m->status()["exclusive_cpus"], "0-1") << "job 1's CPUs stay exclusive";
}

TEST_F(JobManagerLedgerTest, ADeadOwnersClaimIsNotAdoptedAndGpusComeWithTheLiveOnes) {
  add_claim(5, 301, "0-1", true, false, "gone");
  processes_[301].alive = false;  // exited; the ledger has not pruned it yet
  add_claim(6, 302, "2", false, false, "gpu-holder");
  ledger_.claims.back().gpus = {"GPU-a"};
  ledger_.claims.back().gpus_exclusive = true;
  Gpu a;
  a.uuid = "GPU-a";
  a.nvml_index = 0;
  a.numa_node = 1;
  auto m = make_following_manager({a});
  ASSERT_TRUE(m->recover().ok());
  const json st = m->status();
  EXPECT_TRUE(job_of_pid(st, 301).is_null()) << st.dump();
  EXPECT_EQ(st["exclusive_cpus"], "") << "a dead claim books nothing";
  EXPECT_EQ(job_of_pid(st, 302)["gpus"], json::array({"GPU-a"}));
  EXPECT_EQ(st["gpus"][0]["exclusive"], true);
  // mlosd's own grants see the adopted GPU as taken, whoever asks.
  auto busy = m->request(spawn(401, kBob), {{"num_cpus", 1}, {"num_gpus", 1}, {"exclusive_gpus", false}}, {});
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, MLOS_ERR_GPUS_BUSY) << busy.error().describe();
  ledger_.claims.clear();
  ledger_changed_ = true;
  m->tick();
  auto granted = m->request(spawn(402, kBob), {{"num_cpus", 1}, {"num_gpus", 1}}, {});
  ASSERT_TRUE(granted.ok()) << granted.error().describe();
  EXPECT_EQ((*granted)["gpus"], json::array({"GPU-a"}));
  EXPECT_EQ((*granted)["nodes"], json::array({1})) << "CPUs on the GPU's node";
}

TEST_F(JobManagerLedgerTest, AJobWithGpusGetsADeviceRuleTheV2DriverSaysItCannotApply) {
  Gpu a, b;
  a.uuid = "GPU-a", a.nvml_index = 0, a.numa_node = 0, a.minor = 0;
  b.uuid = "GPU-b", b.nvml_index = 1, b.numa_node = 0, b.minor = 1;
  auto m = make_following_manager({a, b});
  ASSERT_TRUE(m->recover().ok());
  auto with = m->request(spawn(101, kAlice), {{"num_cpus", 1}, {"num_gpus", 1}}, {});
  ASSERT_TRUE(with.ok()) << with.error().describe();
  auto without = m->request(spawn(102, kAlice), {{"num_cpus", 1}}, {});
  ASSERT_TRUE(without.ok());
  const json st = m->status();
  EXPECT_NE(job_of_pid(st, 101)["notes"].dump().find("gpu devices: cgroup v2 controls devices with a BPF program"),
            std::string::npos)
      << job_of_pid(st, 101).dump();
  EXPECT_EQ(job_of_pid(st, 102)["notes"].dump().find("gpu devices"), std::string::npos) << "no claims, no rule";
}

TEST_F(JobManagerLedgerTest, AnUnreadableLedgerChangesNothing) {
  add_claim(5, 301, "0-1", true, false, "early");
  auto m = make_following_manager();
  ASSERT_TRUE(m->recover().ok());
  ASSERT_EQ(m->status()["jobs"].size(), 1u);
  // The next read fails (a corrupt file): the adopted job stays.
  ledger_changed_ = true;
  ledger_.claims.clear();
  m = nullptr;
  JobManagerDeps failing = deps();
  failing.ledger_changes = []() -> std::optional<Result<ClaimLedger>> {
    return Result<ClaimLedger>(make_error(MLOS_ERR_STATE_CORRUPT, "bad ledger"));
  };
  JobManager again(std::move(failing));
  ASSERT_TRUE(again.recover().ok());
  again.tick();
  EXPECT_FALSE(job_of_pid(again.status(), 301).is_null()) << "a ledger that cannot be read ends no claim";
}

// ---- per-user quotas ----

class JobManagerQuotaTest : public JobManagerTest {
 protected:
  std::unique_ptr<JobManager> make_manager_with(const nlohmann::json& quotas) {
    JobManagerDeps d = deps();
    d.quotas = UserQuotas{};
    EXPECT_TRUE(d.quotas.merge(quotas).ok());
    return std::make_unique<JobManager>(std::move(d));
  }
};

TEST_F(JobManagerQuotaTest, JobsPerUidBoundsOneUserAndNotAnother) {
  auto m = make_manager_with({{"jobs_per_uid", 2}});
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  auto third = m->request(alice, {{"num_cpus", 1}}, {});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, MLOS_ERR_QUOTA);
  EXPECT_NE(third.error().message.find("jobs_per_uid"), std::string::npos) << third.error().message;
  EXPECT_TRUE(m->request(spawn(201, kBob), {{"num_cpus", 1}}, {}).ok());
  EXPECT_TRUE(m->request(spawn(1, 0), {{"num_cpus", 1}}, {}).ok());  // root is exempt
  ASSERT_TRUE(m->release(alice, 1));
  EXPECT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());  // released: room again
  EXPECT_EQ(m->holdings().at(kAlice).jobs, 2);
}

TEST_F(JobManagerQuotaTest, ExclusiveCpusPerUidKeepsCpusForRoot) {
  // Default bound: all but one of the node's 8 CPUs.
  auto m = make_manager_with(nlohmann::json::object());
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 4}, {"exclusive", true}}, {}).ok());
  auto more = m->request(alice, {{"num_cpus", 4}, {"exclusive", true}}, {});
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().code, MLOS_ERR_QUOTA);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 3}, {"exclusive", true}}, {}).ok());
  EXPECT_EQ(m->holdings().at(kAlice).exclusive_cpus, 7);
  // Root's exclusive request still fits; shared jobs do not count.
  EXPECT_TRUE(m->request(spawn(1, 0), {{"num_cpus", 1}, {"exclusive", true}}, {}).ok());
  EXPECT_EQ(m->holdings().at(kAlice).jobs, 2);
  EXPECT_EQ(m->holdings().count(0), 1u);
}

TEST_F(JobManagerQuotaTest, MemoryPerUidSumsTheJobsBudgets) {
  auto m = make_manager_with({{"memory_bytes_per_uid", 3 * kGigabyte}});
  const auto alice = spawn(101, kAlice);
  ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}, {"memory_bytes", 2 * kGigabyte}}, {}).ok());
  auto over = m->request(alice, {{"num_cpus", 1}, {"memory_bytes", 2 * kGigabyte}}, {});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, MLOS_ERR_QUOTA);
  EXPECT_TRUE(m->request(alice, {{"num_cpus", 1}, {"memory_bytes", kGigabyte}}, {}).ok());
  EXPECT_EQ(m->holdings().at(kAlice).memory_bytes, 3 * kGigabyte);
}

TEST_F(JobManagerQuotaTest, HoldingsAreRebuiltFromTheRegistryAfterARestart) {
  {
    auto m = make_manager_with({{"jobs_per_uid", 2}});
    const auto alice = spawn(101, kAlice);
    ASSERT_TRUE(m->request(alice, {{"num_cpus", 2}, {"exclusive", true}}, {}).ok());
    ASSERT_TRUE(m->request(alice, {{"num_cpus", 1}}, {}).ok());
  }
  auto m = make_manager_with({{"jobs_per_uid", 2}});
  ASSERT_TRUE(m->recover().ok());
  EXPECT_EQ(m->holdings().at(kAlice).jobs, 2);
  EXPECT_EQ(m->holdings().at(kAlice).exclusive_cpus, 2);
  auto third = m->request(spawn(101, kAlice), {{"num_cpus", 1}}, {});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, MLOS_ERR_QUOTA);
}

// The red team's bypass (issue 47, finding 1): a user at their quota runs
// `mlos run --cpus 1 -- CMD`, the command asks for an exclusive job nested
// in that envelope (it counts nothing while nested), and the envelope's
// owner exits. The re-homed job must meet the quota, not hold the CPU.
class JobManagerReHomeQuotaTest : public JobManagerQuotaTest, public ::testing::WithParamInterface<int> {};

TEST_P(JobManagerReHomeQuotaTest, ANestedJobReHomedPastTheQuotaKeepsRunningSharedWithANote) {
  const int bound = GetParam();
  auto m = make_manager_with({{"exclusive_cpus_per_uid", bound}});
  const auto alice = spawn(101, kAlice);
  if (bound > 0) {
    ASSERT_TRUE(m->request(alice, {{"num_cpus", bound}, {"exclusive", true}}, {}).ok());
  }
  const auto run = spawn(102, kAlice);
  auto envelope = m->request(run, {{"num_cpus", 1}, {"envelope", true}}, {});
  ASSERT_TRUE(envelope.ok()) << envelope.error().describe();
  const uint64_t envelope_id = (*envelope)["job"];
  const auto command = spawn(103, kAlice);  // setsid()s, still in the envelope's cgroup
  ASSERT_TRUE(cgroups_->attach("job-" + std::to_string(envelope_id), 103));
  auto nested = m->request(command, {{"num_cpus", 1}, {"exclusive", true}}, {});
  ASSERT_TRUE(nested.ok()) << nested.error().describe();
  const uint64_t id = (*nested)["job"];
  EXPECT_EQ(find_job(m->status(), id)["nested_in"], envelope_id);
  ASSERT_TRUE(m->release(run, envelope_id));  // the envelope's owner exits
  const json job = find_job(m->status(), id);
  EXPECT_TRUE(job["nested_in"].is_null()) << "re-homed: a job of the node";
  EXPECT_EQ(job["exclusive"], false) << job.dump();
  EXPECT_NE(job["notes"].dump().find("exclusive_cpus_per_uid"), std::string::npos) << job.dump();
  EXPECT_EQ(m->holdings().at(kAlice).exclusive_cpus, bound) << "no CPU past the quota";
  // Bob's shared job still finds every CPU Alice does not hold.
  EXPECT_TRUE(m->request(spawn(201, kBob), {{"num_cpus", 8 - bound}}, {}).ok());
}

INSTANTIATE_TEST_SUITE_P(AtAndWithoutAQuota, JobManagerReHomeQuotaTest, ::testing::Values(2, 0));

TEST_F(JobManagerQuotaTest, NestedJobsFitTheirEnvelopesMemoryAndMeetTheQuotaWhenReHomed) {
  constexpr uint64_t kMiB = 1 << 20;
  auto m = make_manager_with({{"memory_bytes_per_uid", 1024 * kMiB}});
  const auto run = spawn(101, kAlice);
  ASSERT_TRUE(m->request(run, {{"num_cpus", 2}, {"envelope", true}, {"memory_bytes", 256 * kMiB}}, {}).ok());
  // Four 1 GiB jobs do not fit a 256 MiB envelope: not one.
  auto big = m->request(run, {{"num_cpus", 1}, {"memory_bytes", 1024 * kMiB}}, {});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_NE(big.error().message.find("nested in job 1"), std::string::npos) << big.error().message;
  ASSERT_TRUE(m->request(run, {{"num_cpus", 1}, {"memory_bytes", 200 * kMiB}}, {}).ok());
  auto past = m->request(run, {{"num_cpus", 1}, {"memory_bytes", 100 * kMiB}}, {});
  ASSERT_FALSE(past.ok()) << "200 of the 256 MiB are carved already";
  EXPECT_TRUE(m->request(run, {{"num_cpus", 1}, {"memory_bytes", 56 * kMiB}}, {}).ok());
  // An envelope that reserved no memory carves none: its nested jobs'
  // memory is checked against the quota when the envelope ends.
  const auto run2 = spawn(102, kAlice);
  ASSERT_TRUE(m->request(run2, {{"num_cpus", 1}, {"envelope", true}}, {}).ok());  // job 4
  const auto command = spawn(103, kAlice);
  ASSERT_TRUE(cgroups_->attach("job-4", 103));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(m->request(command, {{"num_cpus", 1}, {"memory_bytes", 512 * kMiB}}, {}).ok());
  ASSERT_TRUE(m->release(run2, 4));
  EXPECT_LE(m->holdings().at(kAlice).memory_bytes, 1024 * kMiB);
  int unreserved = 0;
  for (uint64_t id = 5; id <= 8; ++id) {
    const json job = find_job(m->status(), id);
    if (job["notes"].dump().find("no longer reserved") != std::string::npos) ++unreserved;
  }
  EXPECT_EQ(unreserved, 3) << "256 MiB were held by the first envelope, one 512 MiB job fits beside it";
}

TEST_F(JobManagerQuotaTest, ExclusiveGpusPerUidKeepsAGpuForOthers) {
  JobManagerDeps d = deps();
  d.quotas = UserQuotas{};
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.uuid = "GPU-" + std::to_string(i);
    g.nvml_index = i;
    g.numa_node = i;
    d.topology.gpus.push_back(g);
  }
  JobManager m(std::move(d));
  const auto alice = spawn(101, kAlice);
  auto both = m.request(alice, {{"num_cpus", 1}, {"num_gpus", 2}}, {});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().code, MLOS_ERR_QUOTA);
  ASSERT_TRUE(m.request(alice, {{"num_cpus", 1}, {"num_gpus", 1}}, {}).ok());
  EXPECT_EQ(m.holdings().at(kAlice).exclusive_gpus, 1);
  EXPECT_FALSE(m.request(alice, {{"num_cpus", 1}, {"num_gpus", 1}}, {}).ok());
  EXPECT_TRUE(m.request(alice, {{"num_cpus", 1}, {"num_gpus", 1}, {"exclusive_gpus", false}}, {}).ok())
      << "shared GPU claims take no GPU from anyone";
  EXPECT_TRUE(m.request(spawn(201, kBob), {{"num_cpus", 1}, {"num_gpus", 1}, {"exclusive_gpus", false}}, {}).ok());
}

// ---- persistence and recovery ----

TEST_F(JobManagerTest, RecoverAdoptsLiveJobsPrunesDeadOnesAndRemovesStrayCgroups) {
  std::string cpus_a;
  {
    auto first = make_manager();
    auto a = first->request(spawn(101, kAlice), {{"num_cpus", 2}, {"exclusive", true}, {"memory_bytes", kGigabyte}}, {});
    ASSERT_TRUE(a.ok()) << a.error().describe();
    cpus_a = (*a)["cpus"].get<std::string>();
    ASSERT_TRUE(first->request(spawn(102, kBob), {{"num_cpus", 2}}, {}).ok());
  }  // the daemon stops; cgroups and the state file stay
  processes_[102].alive = false;
  cgroupfs_->set_processes("mlos/job-2", {});  // its owner's exit emptied it
  ASSERT_TRUE(cgroups_->create("job-99"));     // left over from some older run

  auto second = make_manager();
  auto report = second->recover();
  ASSERT_TRUE(report.ok()) << report.error().describe();

  const json st = second->status();
  ASSERT_EQ(st["jobs"].size(), 1u);
  const json job = find_job(st, 1);
  EXPECT_EQ(job["cpus"], cpus_a);
  EXPECT_EQ(job["uid"], kAlice);
  EXPECT_EQ(job["exclusive"], true);
  EXPECT_EQ(st["exclusive_cpus"], cpus_a);
  EXPECT_EQ(cgroup_file(1, "cpuset.cpus"), cpus_a);
  EXPECT_EQ(cgroup_file(1, "memory.max"), "1000000000");
  EXPECT_EQ(cgroup_file(1, "cgroup.procs"), "101");
  EXPECT_FALSE(cgroup_exists(2));
  EXPECT_FALSE(cgroup_exists(99));
  EXPECT_EQ(saved_ids(), std::vector<uint64_t>{1});

  auto line_with = [&](const std::string& text) {
    for (const auto& l : *report) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(line_with("adopted job 1"));
  EXPECT_TRUE(line_with("pruned job 2"));
  EXPECT_TRUE(line_with("removed stray empty cgroup job-99"));
}

TEST_F(JobManagerTest, RecoverLeavesAStrayCgroupThatStillHasProcesses) {
  ASSERT_TRUE(cgroups_->create("job-99"));
  cgroupfs_->set_processes("mlos/job-99", {555});
  auto m = make_manager();
  auto report = m->recover();
  ASSERT_TRUE(report.ok()) << report.error().describe();
  EXPECT_TRUE(cgroup_exists(99));
  EXPECT_TRUE(m->status()["jobs"].empty());
}

TEST_F(JobManagerTest, JobIdsAreNotReusedAfterRestart) {
  {
    auto first = make_manager();
    ASSERT_TRUE(first->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
    ASSERT_TRUE(first->request(spawn(102, kAlice), {{"num_cpus", 1}}, {}).ok());
    ASSERT_TRUE(first->release(spawn(102, kAlice), 2));
  }
  auto second = make_manager();
  ASSERT_TRUE(second->recover().ok());
  auto next = second->request(spawn(103, kAlice), {{"num_cpus", 1}}, {});
  ASSERT_TRUE(next.ok()) << next.error().describe();
  EXPECT_EQ((*next)["job"], 3);
}

TEST_F(JobManagerTest, RecoverMapsTheAdoptedJobsPhasePageAgain) {
  auto page = make_page();
  {
    auto first = make_manager();
    ASSERT_TRUE(request_with_page(*first, spawn(101, kAlice), {{"num_cpus", 1}}, *page).ok());
  }
  auto second = make_manager();
  ASSERT_TRUE(second->recover().ok());
  EXPECT_EQ(find_job(second->status(), 1)["phase_source"], "page");
  page->writer.publish(MLOS_TRAINING_PHASE_BACKWARD, clock_.advance_ns(1000));
  second->tick();
  EXPECT_EQ(cgroup_file(1, "cpu.weight"), "200");
}

TEST_F(JobManagerTest, RecoverWithoutStateFileStartsEmpty) {
  auto m = make_manager();
  auto report = m->recover();
  ASSERT_TRUE(report.ok()) << report.error().describe();
  EXPECT_TRUE(m->status()["jobs"].empty());
  ASSERT_FALSE(report->empty());
  EXPECT_NE((*report)[0].find("no state file"), std::string::npos);
}

TEST_F(JobManagerTest, CorruptStateFileIsRefusedAndLeftByteIdentical) {
  {
    auto first = make_manager();
    ASSERT_TRUE(first->request(spawn(101, kAlice), {{"num_cpus", 1}}, {}).ok());
  }
  {
    std::fstream f(state_->journal_path(), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(0);
    f.write("#!garbage", 9);
  }
  const std::string before = file_bytes();
  ASSERT_EQ(before.substr(0, 9), "#!garbage");

  processes_[101].alive = false;  // tempt it to prune and rewrite
  auto m = make_manager();
  auto report = m->recover();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, MLOS_ERR_STATE_CORRUPT) << report.error().describe();
  EXPECT_EQ(file_bytes(), before);
  EXPECT_TRUE(cgroup_exists(1)) << "nothing is pruned on the word of a corrupt file";
}

TEST_F(JobManagerTest, StateFileWithFlippedPayloadByteIsCorrupt) {
  {
    auto first = make_manager();
    ASSERT_TRUE(first->request(spawn(101, kAlice), {{"num_cpus", 1}, {"label", "aaaa"}}, {}).ok());
  }
  std::string text = file_bytes();
  const size_t at = text.find("aaaa");
  ASSERT_NE(at, std::string::npos);
  text[at] = 'b';  // still valid JSON, wrong checksum
  std::ofstream(state_->journal_path(), std::ios::binary | std::ios::trunc) << text;

  auto m = make_manager();
  auto report = m->recover();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, MLOS_ERR_STATE_CORRUPT);
  EXPECT_EQ(file_bytes(), text);
}

// ---- request arguments ----

class JobManagerBadArgsTest : public JobManagerTest {
 protected:
  // The request is refused as INVALID_ARGUMENT and leaves no trace.
  void expect_refused(const json& args) {
    auto m = make_manager();
    auto r = m->request(spawn(101, kAlice), args, {});
    ASSERT_FALSE(r.ok()) << "granted: " << r->dump();
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT) << r.error().describe();
    EXPECT_TRUE(m->status()["jobs"].empty());
    EXPECT_FALSE(fs::exists(state_->path()) || fs::exists(state_->journal_path()));
    EXPECT_FALSE(cgroup_exists(1));
  }
};

TEST_F(JobManagerBadArgsTest, UnknownKey) { expect_refused({{"num_cpus", 1}, {"num_tpus", 1}}); }

TEST_F(JobManagerBadArgsTest, WrongType) {
  expect_refused({{"num_cpus", "2"}});
  expect_refused({{"exclusive", 1}});
  expect_refused({{"label", 7}});
}

TEST_F(JobManagerBadArgsTest, NumberOfTheWrongKindIsNotConverted) {
  expect_refused({{"num_cpus", 2.5}});
  expect_refused({{"num_cpus", true}});
  expect_refused({{"priority", false}});
}

TEST_F(JobManagerBadArgsTest, IntegerTooLargeForItsFieldDoesNotWrap) {
  expect_refused({{"num_cpus", (uint64_t{1} << 32) + 2}});     // would wrap to 2
  expect_refused({{"priority", (uint64_t{1} << 32) + 3}});     // would wrap to 3
  expect_refused({{"page_fd", json(uint64_t{1} << 63)}});
}

TEST_F(JobManagerBadArgsTest, WrongTypeIsReportedByFieldName) {
  auto m = make_manager();
  auto r = m->request(spawn(101, kAlice), {{"priority", "high"}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("priority"), std::string::npos) << r.error().message;
}

TEST_F(JobManagerBadArgsTest, ArgumentsThatAreNotAnObject) {
  expect_refused(nullptr);
  expect_refused(json::array({1}));
}

TEST_F(JobManagerBadArgsTest, PriorityOutOfRange) {
  expect_refused({{"priority", MLOS_PRIORITY_MAX + 1}});
  expect_refused({{"priority", MLOS_PRIORITY_MIN - 1}});
}

TEST_F(JobManagerBadArgsTest, ZeroCpus) { expect_refused({{"num_cpus", 0}}); }

TEST_F(JobManagerBadArgsTest, NegativeMemory) { expect_refused({{"num_cpus", 1}, {"memory_bytes", -1}}); }

TEST_F(JobManagerTest, PipeAsPhasePageIsIgnoredWithANote) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  os::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  auto m = make_manager();
  auto r = m->request(spawn(101, kAlice), {{"num_cpus", 1}, {"page_fd", 9}}, os::UniqueFd(dup(read_end.get())));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ((*r)["notes"].size(), 1u);
  EXPECT_NE((*r)["notes"][0].get<std::string>().find("phase page"), std::string::npos);
  const json job = find_job(m->status(), 1);
  EXPECT_EQ(job["phase_source"], "socket");
  EXPECT_EQ(saved_registry().jobs.at(0).page_fd, -1) << "a restart must not try to fetch it";
  EXPECT_TRUE(m->set_phase(spawn(101, kAlice), 1, MLOS_TRAINING_PHASE_BACKWARD));
}

TEST_F(JobManagerTest, RegularFileAsPhasePageIsIgnoredWithANote) {
  const std::string path = (dir_ / "not-a-page").string();
  std::ofstream(path) << std::string(8192, '\0');
  os::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  auto m = make_manager();
  auto r = m->request(spawn(101, kAlice), {{"num_cpus", 1}, {"page_fd", 9}}, std::move(fd));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ((*r)["notes"].size(), 1u);
  EXPECT_NE((*r)["notes"][0].get<std::string>().find("phase page"), std::string::npos);
  EXPECT_EQ(find_job(m->status(), 1)["phase_source"], "socket");
}

TEST_F(JobManagerTest, PageWithoutItsNumberIsIgnoredWithANote) {
  auto m = make_manager();
  auto page = make_page();
  auto r = m->request(spawn(101, kAlice), {{"num_cpus", 1}}, os::UniqueFd(dup(page->page.fd())));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ((*r)["notes"].size(), 1u);
  EXPECT_NE((*r)["notes"][0].get<std::string>().find("no page_fd"), std::string::npos);
  EXPECT_EQ(find_job(m->status(), 1)["phase_source"], "socket");
}

TEST_F(JobManagerTest, UnknownRequesterIsRefused) {
  auto m = make_manager();
  auto r = m->request(os::PeerCredentials{4242, kAlice, kAlice}, {{"num_cpus", 1}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(m->status()["jobs"].empty());
  EXPECT_FALSE(fs::exists(state_->path()) || fs::exists(state_->journal_path()));
}

// ---- memory pressure ----

namespace memory_pressure {

uint64_t rings(int efd) {
  uint64_t n = 0;
  return read(efd, &n, sizeof n) == sizeof n ? n : 0;
}

}  // namespace memory_pressure

class JobManagerMemoryTest : public JobManagerTest {
 protected:
  // A job of `peer` with `memory_bytes` and a doorbell the test holds.
  uint64_t watched_job(JobManager& m, const os::PeerCredentials& peer, uint64_t memory_bytes, json thresholds = {}) {
    auto granted = m.request(peer, {{"num_cpus", 1}, {"memory_bytes", memory_bytes}}, {});
    EXPECT_TRUE(granted.ok()) << granted.error().describe();
    const uint64_t id = (*granted)["job"];
    doorbell_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    client_fds_[{peer.pid, doorbell_}] = doorbell_;
    json args{{"job", id}, {"event_fd", doorbell_}};
    if (!thresholds.is_null()) args["thresholds"] = thresholds;
    auto watched = m.watch_memory(peer, args, os::UniqueFd(dup(doorbell_)));
    EXPECT_TRUE(watched.ok()) << watched.error().describe();
    if (watched.ok()) {
      EXPECT_EQ((*watched)["report"]["level"], 0);
    }
    return id;
  }
  void use_memory(uint64_t job, uint64_t bytes) {
    cgroupfs_->set_memory_current("mlos/job-" + std::to_string(job), bytes);
  }
  void TearDown() override {
    if (doorbell_ >= 0) close(doorbell_);
    JobManagerTest::TearDown();
  }
  int doorbell_ = -1;
};

TEST_F(JobManagerMemoryTest, LevelChangesRingTheOwnersDoorbellAndShowInStatus) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  const uint64_t id = watched_job(*m, alice, kGigabyte);
  m->tick();
  EXPECT_EQ(memory_pressure::rings(doorbell_), 0u);  // nothing used yet

  use_memory(id, kGigabyte / 100 * 85);  // 15 % headroom
  m->tick();
  EXPECT_EQ(memory_pressure::rings(doorbell_), 1u);
  auto st = m->memory_status(alice, id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)["report"]["level"], MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ((*st)["report"]["source"], "cgroup");
  EXPECT_EQ((*st)["report"]["budget_bytes"], kGigabyte);
  EXPECT_EQ(find_job(m->status(), id)["memory_pressure"]["level"], MLOS_MEMORY_PRESSURE_MODERATE);

  m->tick();  // same level: no ring
  EXPECT_EQ(memory_pressure::rings(doorbell_), 0u);
  use_memory(id, kGigabyte / 100 * 95);
  m->tick();
  EXPECT_EQ(memory_pressure::rings(doorbell_), 1u);
  EXPECT_EQ((*m->memory_status(alice, id))["report"]["level"], MLOS_MEMORY_PRESSURE_CRITICAL);
  const auto samples = m->samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].memory_pressure_level, MLOS_MEMORY_PRESSURE_CRITICAL);  // the metrics' source
  EXPECT_EQ(samples[0].memory_pressure_changes, 2u);

  // Back down only after the hold time (1 s by default).
  use_memory(id, kGigabyte / 2);
  m->tick();
  clock_.advance_ns(999'000'000);
  m->tick();
  EXPECT_EQ(memory_pressure::rings(doorbell_), 0u);
  clock_.advance_ns(1'000'000);
  m->tick();
  EXPECT_EQ(memory_pressure::rings(doorbell_), 1u);
  EXPECT_EQ((*m->memory_status(alice, id))["report"]["level"], MLOS_MEMORY_PRESSURE_NORMAL);
}

TEST_F(JobManagerMemoryTest, TheWakeupVersionChangesOnlyWithTheWatches) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  const uint64_t before = m->memory_wakeups_version();
  watched_job(*m, alice, kGigabyte);
  const uint64_t watched = m->memory_wakeups_version();
  EXPECT_NE(watched, before);
  m->tick();
  EXPECT_EQ(m->memory_wakeups_version(), watched);  // sampling alone changes nothing
  processes_[101].alive = false;
  m->tick();  // the owner is gone: the job and its wake-ups go
  EXPECT_NE(m->memory_wakeups_version(), watched);
  EXPECT_TRUE(m->memory_wakeups().empty());
}

TEST_F(JobManagerMemoryTest, ThresholdsFromTheClientOrTheConfig) {
  auto d = deps();
  d.memory_thresholds.moderate_headroom = 0.50;
  d.memory_thresholds.critical_headroom = 0.40;
  JobManager m(d);
  const auto alice = spawn(101, kAlice);
  const uint64_t by_config = watched_job(m, alice, kGigabyte);
  use_memory(by_config, kGigabyte / 100 * 55);  // 45 % headroom: MODERATE by the config's 50 %
  m.tick();
  EXPECT_EQ((*m.memory_status(alice, by_config))["report"]["level"], MLOS_MEMORY_PRESSURE_MODERATE);

  const auto bob = spawn(102, kBob);
  const uint64_t by_client = watched_job(m, bob, kGigabyte, {{"moderate_headroom_percent", 30}, {"critical_headroom_percent", 20}});
  use_memory(by_client, kGigabyte / 100 * 55);
  m.tick();
  EXPECT_EQ((*m.memory_status(bob, by_client))["report"]["level"], MLOS_MEMORY_PRESSURE_NORMAL);
}

TEST_F(JobManagerMemoryTest, BadWatchRequestsAreRefusedAndChangeNothing) {
  auto m = make_manager();
  const auto alice = spawn(101, kAlice);
  auto granted = m->request(alice, {{"num_cpus", 1}, {"memory_bytes", kGigabyte}}, {});
  ASSERT_TRUE(granted.ok());
  const uint64_t id = (*granted)["job"];
  const int efd = eventfd(0, EFD_CLOEXEC);
  auto watch = [&](const os::PeerCredentials& who, json args, int fd) {
    return m->watch_memory(who, args, fd >= 0 ? os::UniqueFd(dup(fd)) : os::UniqueFd());
  };
  // Another user's job, no descriptor, not an eventfd, bad thresholds, unknown keys.
  EXPECT_EQ(watch(spawn(102, kBob), {{"job", id}, {"event_fd", 5}}, efd).error().code, MLOS_ERR_PERMISSION);
  EXPECT_EQ(watch(alice, {{"job", id}, {"event_fd", 5}}, -1).error().code, MLOS_ERR_INVALID_ARGUMENT);
  const int not_eventfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(watch(alice, {{"job", id}, {"event_fd", 5}}, not_eventfd).error().code, MLOS_ERR_INVALID_ARGUMENT);
  auto inverted = watch(alice, {{"job", id}, {"event_fd", 5}, {"thresholds", {{"critical_headroom_percent", 50}}}}, efd);
  EXPECT_EQ(inverted.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(watch(alice, {{"job", id}, {"event_fd", 5}, {"verbose", true}}, efd).error().code,
            MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(watch(alice, {{"job", id}}, efd).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ((*m->memory_status(alice, id))["watching"], false);
  EXPECT_EQ(m->memory_status(spawn(103, kBob), id).error().code, MLOS_ERR_PERMISSION);
  close(efd);
  close(not_eventfd);
}

TEST_F(JobManagerMemoryTest, ARestartedDaemonTakesTheDoorbellAgain) {
  const auto alice = spawn(101, kAlice);
  uint64_t id;
  {
    auto m = make_manager();
    id = watched_job(*m, alice, kGigabyte, {{"hold_ms", 250}});
  }
  auto saved = saved_registry();
  ASSERT_EQ(saved.jobs.size(), 1u);
  EXPECT_EQ(saved.jobs[0].memory_event_fd, doorbell_);
  EXPECT_EQ(saved.jobs[0].memory_thresholds["hold_ms"], 250);

  auto m = make_manager();
  ASSERT_TRUE(m->recover().ok());
  use_memory(id, kGigabyte / 100 * 95);
  m->tick();
  EXPECT_EQ(memory_pressure::rings(doorbell_), 1u);
  EXPECT_EQ((*m->memory_status(alice, id))["watching"], true);
}


TEST_F(JobManagerMemoryTest, OnV2TheJobsOwnPsiCountsNotTheNodes) {
  auto d = deps();
  d.node_memory = [] {
    MemoryFigures f;
    f.consider(8ull << 30, 16ull << 30, MemorySource::kNode);
    f.psi_some_avg10 = 50;  // the node is stalling; this job is not
    return f;
  };
  JobManager m(d);
  const auto alice = spawn(101, kAlice);
  const uint64_t id = watched_job(m, alice, 0);  // no memory_bytes: only node and PSI
  m.tick();
  EXPECT_EQ((*m.memory_status(alice, id))["report"]["level"], MLOS_MEMORY_PRESSURE_NORMAL);
  cgroupfs_->set_memory_pressure_avg10("mlos/job-" + std::to_string(id), 12.5, 0);
  m.tick();
  auto st = m.memory_status(alice, id);
  EXPECT_EQ((*st)["report"]["level"], MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_DOUBLE_EQ((*st)["report"]["psi_some_avg10"].get<double>(), 12.5);
  EXPECT_EQ((*st)["report"]["source"], "node");
  EXPECT_EQ(memory_pressure::rings(doorbell_), 1u);
}

}  // namespace
}  // namespace mlos::daemon
