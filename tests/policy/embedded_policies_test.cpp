// SPDX-License-Identifier: Apache-2.0
// The embedded engine's policy service (engine/embedded_policies.h) with
// real host processes: advice reaches the job, hosts outlive the thread
// that asked for them, phases reach the policies, what needs a cgroup is
// refused and counted, failures leave the job on its defaults, defaults
// are attached, and the last job's going unloads the host. The figures a
// policy reads are injected where a test needs a known load.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "engine/embedded_policies.h"
#include "engine/policy_report_file.h"
#include "policy_test_support.h"

namespace mlos {
namespace {

using nlohmann::json;
using policy::testing::child_hosts;
using policy::testing::test_options;

// Polls `done` for at most `limit` of real time (a bound on a broken test).
bool eventually(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

EmbeddedPolicies::JobGrant grant_of(const char* cpus) {
  EmbeddedPolicies::JobGrant g;
  g.cpus = *CpuSet::parse_list(cpus);
  g.primary_node = 0;
  g.recommended_threads = g.cpus.count();
  return g;
}

EmbeddedPolicies::Options options(const std::string& dir = MLOS_TEST_POLICY_DIR) {
  EmbeddedPolicies::Options o;
  o.hosts = test_options(dir);
  o.hosts.unload_grace_ms = 100;
  o.hosts.tick_interval_ms = {{"counter", 50}, {"out-of-grant", 50}, {"crash-tick", 50}, {"manager", 50}};
  return o;
}

json loaded(EmbeddedPolicies& p, const std::string& name) {
  const json status = p.status();
  for (const auto& l : status["loaded"]) {
    if (l["name"] == name) return l;
  }
  return nullptr;
}

// A job registered with the service, its phases published the way a Job
// publishes them.
struct ServedJob {
  ServedJob(EmbeddedPolicies& p, uint64_t id, const char* cpus = "0-3")
      : policies(p), id(id), phases(EmbeddedPolicies::make_phase_sink(1)) {
    EXPECT_TRUE(p.add_job(id, grant_of(cpus), phases).ok());
  }
  ~ServedJob() { policies.remove_job(id); }
  int threads() {
    auto a = policies.advice(id);
    EXPECT_TRUE(a.ok()) << a.error().describe();
    return a ? a->threads : -1;
  }
  EmbeddedPolicies& policies;
  uint64_t id;
  std::shared_ptr<PhaseSink> phases;
};

TEST(EmbeddedPolicies, AdviceReachesTheJobsAndOneHostServesThemAll) {
  EmbeddedPolicies p(options());
  ServedJob a(p, 11), b(p, 12);
  ASSERT_TRUE(p.request(a.id, "counter", json::object()).ok());
  auto names = p.request(b.id, "counter", json::object());
  ASSERT_TRUE(names.ok()) << names.error().describe();
  EXPECT_EQ(*names, std::vector<std::string>{"counter"});
  // counter advises as many threads as it has jobs, on every tick.
  ASSERT_TRUE(eventually([&] { return a.threads() == 2 && b.threads() == 2; }));
  auto advice = p.advice(a.id);
  EXPECT_TRUE(advice->threads_advised);
  EXPECT_EQ(advice->threads_by, "counter");
  EXPECT_EQ(child_hosts().size(), 1u);
  ASSERT_TRUE(p.release(b.id, "counter").ok());
  ASSERT_TRUE(eventually([&] { return a.threads() == 1; }));
  // b lost the policy's effect at once: back to its grant.
  EXPECT_FALSE(p.advice(b.id)->threads_advised);
  EXPECT_EQ(b.threads(), 4);
}

TEST(EmbeddedPolicies, AHostOutlivesTheThreadThatAskedForIt) {
  EmbeddedPolicies p(options());
  ServedJob a(p, 21);
  std::thread([&] { ASSERT_TRUE(p.request(a.id, "counter", json::object()).ok()); }).join();
  const json pid = loaded(p, "counter")["pid"];
  ASSERT_TRUE(pid.is_number());
  // A host started by the caller's thread would get SIGKILL (its
  // PR_SET_PDEATHSIG) now that the thread is gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(child_hosts(), std::vector<pid_t>{pid.get<pid_t>()});
  EXPECT_EQ(loaded(p, "counter")["state"], "running");
  EXPECT_EQ(loaded(p, "counter")["failures"], 0);
}

TEST(EmbeddedPolicies, PhasesReachThePoliciesAndCgroupActionsAreRefusedAndCounted) {
  EmbeddedPolicies p(options(MLOS_SHIPPED_POLICY_DIR));
  ServedJob a(p, 31);
  ASSERT_TRUE(p.request(a.id, "example", json{{"threads", 2}}).ok());
  EXPECT_EQ(a.threads(), 2);  // example advises at attach
  // example sets a CPU weight on every phase change: an embedded job has
  // no cgroup, so each one is refused and counted, never applied.
  a.phases->publish(MLOS_TRAINING_PHASE_CHECKPOINT, 2);
  ASSERT_TRUE(eventually([&] { return loaded(p, "example")["actions_refused"]["cpu_weight"] == 1; }));
  a.phases->publish(MLOS_TRAINING_PHASE_FORWARD, 3);
  ASSERT_TRUE(eventually([&] { return loaded(p, "example")["actions_refused"]["cpu_weight"] == 2; }));
  EXPECT_EQ(loaded(p, "example")["actions_applied"]["cpu_weight"], 0);
  EXPECT_EQ(loaded(p, "example")["actions_applied"]["threads"], 1);
  // Re-publishing the same phase is no change.
  a.phases->publish(MLOS_TRAINING_PHASE_FORWARD, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * EmbeddedPolicies::kFollowMs));
  EXPECT_EQ(loaded(p, "example")["actions_refused"]["cpu_weight"], 2);
}

TEST(EmbeddedPolicies, OutOfGrantAdviceIsRefusedAndTheJobKeepsItsGrant) {
  EmbeddedPolicies p(options());
  ServedJob a(p, 41, "0-1");
  ASSERT_TRUE(p.request(a.id, "out-of-grant", json::object()).ok());
  ASSERT_TRUE(eventually([&] { return loaded(p, "out-of-grant")["actions_refused"]["threads"] >= 1; }));
  EXPECT_EQ(loaded(p, "out-of-grant")["actions_applied"]["threads"], 0);
  EXPECT_FALSE(p.advice(a.id)->threads_advised);
  EXPECT_EQ(a.threads(), 2);
}

TEST(EmbeddedPolicies, ACrashingPolicyLeavesTheJobOnItsDefaultsAndSaysSo) {
  EmbeddedPolicies p(options());
  ServedJob a(p, 51);
  ASSERT_TRUE(p.request(a.id, "crash-tick", json::object()).ok());
  ASSERT_TRUE(eventually([&] { return !p.advice(a.id)->failed.empty(); }));
  auto advice = p.advice(a.id);
  EXPECT_EQ(advice->failed[0].name, "crash-tick");
  EXPECT_NE(advice->failed[0].why.find("SIGSEGV"), std::string::npos) << advice->failed[0].why;
  EXPECT_EQ(advice->policies, std::vector<std::string>{"crash-tick"});  // kept: restarted with backoff
  EXPECT_EQ(advice->threads, 4);
}

TEST(EmbeddedPolicies, UnknownPoliciesBadConfigsAndUnknownJobsGetTheirCodes) {
  EmbeddedPolicies p(options(MLOS_SHIPPED_POLICY_DIR));
  ServedJob a(p, 61);
  auto unknown = p.request(a.id, "no-such", json::object());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(unknown.error().message.find(MLOS_SHIPPED_POLICY_DIR), std::string::npos) << unknown.error().message;
  auto bad = p.request(a.id, "example", json{{"threads", "many"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.error().message.find("threads"), std::string::npos) << bad.error().message;
  EXPECT_EQ(p.request(999, "example", json::object()).error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(p.advice(999).error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(p.release(a.id, "example").error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(p.add_job(0, grant_of("0"), EmbeddedPolicies::make_phase_sink(1)).error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_TRUE(p.advice(a.id)->policies.empty());
}

TEST(EmbeddedPolicies, DefaultsAreAttachedAndTheLastJobsGoingUnloadsTheHost) {
  auto o = options();
  o.defaults = {"counter", "no-such"};  // one that cannot be attached is skipped
  EmbeddedPolicies p(std::move(o));
  {
    ServedJob a(p, 71);
    p.attach_defaults(a.id);
    EXPECT_EQ(p.advice(a.id)->policies, std::vector<std::string>{"counter"});
    EXPECT_EQ(child_hosts().size(), 1u);
  }
  // Unloaded a grace period (100 ms here) after its last job went.
  ASSERT_TRUE(eventually([&] { return child_hosts().empty(); }));
  EXPECT_TRUE(p.status()["loaded"].empty());
}

TEST(EmbeddedPolicies, TheThreadGovernorAdvisesFewerThreadsWhileAnotherProcessTakesACpu) {
  // Injected figures: the job's two CPUs are busy 2 s a second, this
  // process uses 1 s of it, so the rest of the machine takes a whole CPU.
  auto o = options(MLOS_SHIPPED_POLICY_DIR);
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::atomic<bool> hog{true};
  o.process_cpu_seconds = [seconds] { return std::optional<double>(seconds()); };
  o.cpu_busy_seconds = [seconds, &hog](const CpuSet&) { return std::optional<double>(hog ? 2 * seconds() : seconds()); };
  EmbeddedPolicies p(std::move(o));
  ServedJob a(p, 81, "0-1");
  ASSERT_TRUE(p.request(a.id, "thread-governor", json::object()).ok());
  ASSERT_TRUE(eventually([&] { return a.threads() == 1; }));
  EXPECT_EQ(p.advice(a.id)->threads_by, "thread-governor");
  hog = false;  // the CPU is free again
  ASSERT_TRUE(eventually([&] { return a.threads() == 2; }));
}

// A policy that manages its jobs' policies (the "manager" fixture): what it
// attaches reaches the job and goes when it goes; what it may not do (attach
// itself, release what it did not attach) is refused and counted; its
// placement and report reach the job's report file, which is removed with
// the job.
TEST(EmbeddedPolicies, APolicyAttachesPoliciesForItsJobAndTakesThemAlongWhenItGoes) {
  char dir_template[] = "/tmp/mlos-reports-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = std::string(dir_template) + "/policy-reports";
  auto o = options();
  o.report_dir = [dir] { return dir; };
  EmbeddedPolicies p(std::move(o));
  {
    ServedJob a(p, 91);
    ASSERT_TRUE(p.request(a.id, "manager", json::object()).ok());
    auto uses = [&](const std::string& name) {
      const auto names = p.advice(a.id)->policies;
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    ASSERT_TRUE(eventually([&] { return uses("counter"); }));
    ASSERT_TRUE(eventually([&] { return a.threads() == 1; }));  // counter's advice: one job
    const json report = *p.report(a.id);
    EXPECT_EQ(report["attached_by_policy"], (json{{"counter", "manager"}}));
    EXPECT_EQ(report["placement"]["recommended"], "exclusive");
    EXPECT_EQ(report["placement"]["by"], "manager");
    EXPECT_EQ(report["placement"]["reason"], "a test says so");
    EXPECT_GE(report["reports"]["manager"]["ticks"].get<int>(), 1);
    // Bad arguments are refused by the host before they become actions: no
    // name, not a policy name, a config that is not an object or over 4096
    // bytes, an unknown placement, a reason that is not UTF-8, a report
    // that is not JSON or too long; another job's is NOT_FOUND.
    json refused(9, MLOS_ERR_INVALID_ARGUMENT);
    refused.push_back(MLOS_ERR_NOT_FOUND);
    EXPECT_EQ(report["reports"]["manager"]["bad"], refused);
    ASSERT_TRUE(eventually([&] {
      const json l = loaded(p, "manager");
      return l["actions_refused"]["request_policy"] >= 1 && l["actions_refused"]["release_policy"] >= 1;
    }));
    // The file `mlos status` reads says the same, with this process's pid.
    auto file = read_policy_report(dir, a.id);
    ASSERT_TRUE(file.has_value());
    EXPECT_EQ((*file)["pid"], getpid());
    EXPECT_EQ((*file)["attached_by_policy"], report["attached_by_policy"]);
    // Releasing the manager takes what it attached and what it published.
    ASSERT_TRUE(p.release(a.id, "manager").ok());
    ASSERT_TRUE(eventually([&] { return !uses("counter"); }));
    const json after = *p.report(a.id);
    EXPECT_TRUE(after["attached_by_policy"].empty());
    EXPECT_TRUE(after["reports"].empty());
    EXPECT_FALSE(after.contains("placement"));
    EXPECT_TRUE(read_policy_report(dir, a.id).has_value());
  }
  EXPECT_FALSE(read_policy_report(dir, 91).has_value());  // gone with the job
  EXPECT_EQ(p.report(91).error().code, MLOS_ERR_INVALID_HANDLE);
}

TEST(EmbeddedPolicies, APolicyLeavesAPolicyTheJobAskedForItself) {
  EmbeddedPolicies p(options());
  ServedJob a(p, 92);
  ASSERT_TRUE(p.request(a.id, "counter", json::object()).ok());
  // "release" in its config: the manager asks every tick to release counter.
  ASSERT_TRUE(p.request(a.id, "manager", json{{"release", true}}).ok());
  ASSERT_TRUE(eventually([&] { return loaded(p, "manager")["actions_refused"]["release_policy"] >= 2; }));
  EXPECT_EQ(p.advice(a.id)->policies, (std::vector<std::string>{"counter", "manager"}));
  EXPECT_TRUE((*p.report(a.id))["attached_by_policy"].empty());
  ASSERT_TRUE(p.release(a.id, "manager").ok());
  EXPECT_EQ(p.advice(a.id)->policies, std::vector<std::string>{"counter"});
}

}  // namespace
}  // namespace mlos
