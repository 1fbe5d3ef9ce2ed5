// SPDX-License-Identifier: Apache-2.0
// The life of a loaded policy: one host shared by every job that uses it,
// events delivered to it, unloaded a grace period after its last job goes,
// restarted with growing backoff after failures.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

using nlohmann::json;

// Deadlines far beyond the clock moves these tests make, so that moving
// the clock while a reply is on its way is never taken for a hang.
PolicyHostsOptions lifecycle_options() {
  PolicyHostsOptions o = test_options();
  o.deadline_ms = 600000;
  o.start_deadline_ms = 600000;
  o.unload_grace_ms = 60000;
  o.backoff_initial_ms = 1000;
  o.stable_after_ms = 3600000;
  return o;
}

pid_t pid_of(Harness& h, const std::string& name) { return h.status_of(name)["pid"].get<pid_t>(); }

TEST(PolicyLifecycleTest, OneHostServesAllItsJobsUntilTheGracePeriodAfterTheLast) {
  Harness h(lifecycle_options());
  for (uint64_t job : {1, 2, 3}) {
    h.owner().add_job(job);
    ASSERT_TRUE(h.hosts().attach("counter", job, json::object()).ok());
  }
  const pid_t pid = pid_of(h, "counter");
  EXPECT_EQ(h.status_of("counter")["jobs"], json::array({1, 2, 3}));
  EXPECT_TRUE(h.owner().logged("counter: job 3 attached (3 jobs)")) << "the same host saw all three";
  EXPECT_EQ(child_hosts(), std::vector<pid_t>{pid});

  ASSERT_TRUE(h.tick_once("counter"));
  for (uint64_t job : {1, 2, 3}) EXPECT_TRUE(h.owner().applied_value("counter", ActionKind::kThreads, job, 3));

  ASSERT_TRUE(h.hosts().detach("counter", 1).ok());
  EXPECT_EQ(h.owner().count_resets("counter", 1), 1u);
  ASSERT_TRUE(h.tick_once("counter"));
  for (uint64_t job : {2, 3}) EXPECT_TRUE(h.owner().applied_value("counter", ActionKind::kThreads, job, 2));
  EXPECT_EQ(h.owner().count_applied("counter", ActionKind::kThreads, 1), 1u) << "job 1 got nothing after detach";
  EXPECT_EQ(pid_of(h, "counter"), pid);

  ASSERT_TRUE(h.hosts().detach("counter", 2).ok());
  EXPECT_EQ(pid_of(h, "counter"), pid);
  ASSERT_TRUE(h.hosts().detach("counter", 3).ok());
  EXPECT_EQ(h.hosts().detach("counter", 3).error().code, MLOS_ERR_NOT_FOUND);

  // No job left; inside the grace period it stays loaded.
  h.clock().advance_ms(59999);
  for (int i = 0; i < 20; ++i) h.hosts().poll();
  ASSERT_FALSE(h.status_of("counter").is_null());
  EXPECT_EQ(pid_of(h, "counter"), pid);
  EXPECT_EQ(h.status_of("counter")["jobs"], json::array());

  h.clock().advance_ms(1);
  ASSERT_TRUE(h.poll_until([&] { return h.hosts().status().empty(); }));
  EXPECT_FALSE(process_exists(pid));
  EXPECT_TRUE(child_hosts().empty());
}

TEST(PolicyLifecycleTest, AJobReturningWithinTheGracePeriodKeepsTheHost) {
  Harness h(lifecycle_options());
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("counter", 1, json::object()).ok());
  const pid_t pid = pid_of(h, "counter");
  ASSERT_TRUE(h.hosts().detach("counter", 1).ok());
  h.clock().advance_ms(30000);
  h.hosts().poll();
  ASSERT_TRUE(h.hosts().attach("counter", 1, json::object()).ok());
  h.clock().advance_ms(40000);  // 70 s after the detach, 40 s after the return
  for (int i = 0; i < 20; ++i) h.hosts().poll();
  ASSERT_FALSE(h.status_of("counter").is_null());
  EXPECT_EQ(pid_of(h, "counter"), pid);
}

TEST(PolicyLifecycleTest, BackoffDoublesAfterEachFailure) {
  Harness h(lifecycle_options());
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("crash-tick", 1, json::object()).ok());
  auto failures = [&] { return h.status_of("crash-tick")["failures"].get<int>(); };
  auto restarts = [&] { return h.status_of("crash-tick")["restarts"].get<int>(); };
  auto attaches = [&] { return h.owner().count_applied("crash-tick", ActionKind::kThreads, 1); };

  ASSERT_TRUE(h.tick_once("crash-tick"));
  ASSERT_EQ(failures(), 1);
  h.clock().advance_ms(1000);  // the first backoff
  ASSERT_TRUE(h.poll_until([&] { return restarts() == 1 && attaches() == 2; }));

  ASSERT_TRUE(h.tick_once("crash-tick"));
  ASSERT_EQ(failures(), 2);
  h.clock().advance_ms(1000);
  for (int i = 0; i < 20; ++i) h.hosts().poll();
  EXPECT_EQ(restarts(), 1) << "the second backoff is 2 s";
  EXPECT_EQ(h.status_of("crash-tick")["state"], "failed");
  h.clock().advance_ms(1000);
  ASSERT_TRUE(h.poll_until([&] { return restarts() == 2 && attaches() == 3; }));
  EXPECT_EQ(h.owner().count_resets("crash-tick", 1), 2u);
}

TEST(PolicyLifecycleTest, AFailedPolicyWithoutJobsIsKeptForTheGracePeriod) {
  // Its failure stays visible, and a job that comes back during the
  // backoff is told the policy failed rather than starting a fresh host
  // (which would let a crashing policy skip its backoff).
  Harness h(lifecycle_options());
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("crash-tick", 1, json::object()).ok());
  ASSERT_TRUE(h.tick_once("crash-tick"));
  ASSERT_EQ(h.status_of("crash-tick")["state"], "failed");
  ASSERT_TRUE(h.hosts().detach("crash-tick", 1).ok());
  for (int i = 0; i < 5; ++i) h.hosts().poll();
  ASSERT_FALSE(h.status_of("crash-tick").is_null());
  EXPECT_EQ(h.status_of("crash-tick")["failures"], 1);

  Status again = h.hosts().attach("crash-tick", 1, json::object());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, MLOS_ERR_POLICY_FAILED);
  EXPECT_TRUE(child_hosts().empty());

  h.clock().advance_ms(1000 + 60000);  // the backoff, then the grace period
  h.hosts().poll();
  EXPECT_TRUE(h.hosts().status().empty());
}

TEST(PolicyLifecycleTest, PinnedPolicyStaysWithoutJobsUntilUnloaded) {
  Harness h(lifecycle_options());
  ASSERT_TRUE(h.hosts().load("counter").ok());
  const pid_t pid = pid_of(h, "counter");
  EXPECT_EQ(h.status_of("counter")["pinned"], true);
  h.clock().advance_ms(120000);
  for (int i = 0; i < 5; ++i) h.hosts().poll();
  ASSERT_FALSE(h.status_of("counter").is_null());

  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("counter", 1, json::object()).ok());
  EXPECT_EQ(h.hosts().unload("counter").error().code, MLOS_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(h.hosts().detach("counter", 1).ok());
  ASSERT_TRUE(h.hosts().unload("counter").ok());
  EXPECT_TRUE(h.hosts().status().empty());
  EXPECT_FALSE(process_exists(pid));
  EXPECT_EQ(h.hosts().unload("counter").error().code, MLOS_ERR_NOT_FOUND);
}

// Issue 47, finding 2: a policy of a few hundred jobs (the default policies
// are attached to every job) overflowed the host frame with one tick's
// figures, and failed at every tick. Its figures now come over as many
// frames as they need, all before the tick.
TEST(PolicyLifecycleTest, ATickOfMoreJobsThanOneFrameHoldsSeesEveryJobsFiguresFresh) {
  Harness h(lifecycle_options());
  constexpr uint64_t kJobs = 2000;
  for (uint64_t job = 1; job <= kJobs; ++job) {
    h.owner().add_job(job);
    // A long CPU list: some 600 bytes of figures a job, 1.2 MB for all.
    std::snprintf(h.owner().figures[job].cpus, sizeof h.owner().figures[job].cpus, "%s",
                  std::string(200, '0').append("-1").c_str());
    ASSERT_TRUE(h.hosts().attach("fresh-figures", job, json::object()).ok()) << job;
  }
  for (auto& [job, f] : h.owner().figures) f.phase = MLOS_TRAINING_PHASE_BACKWARD;
  ASSERT_TRUE(h.tick_once("fresh-figures"));
  const json st = h.status_of("fresh-figures");
  EXPECT_EQ(st["failures"], 0) << st.dump();
  EXPECT_EQ(st["ticks"], 1);
  EXPECT_TRUE(h.owner().logged("fresh-figures: 2000 of 2000 jobs in BACKWARD"));
}

}  // namespace
}  // namespace mlos::policy::testing
