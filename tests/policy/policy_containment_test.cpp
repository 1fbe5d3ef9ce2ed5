// SPDX-License-Identifier: Apache-2.0
// Policies that crash, hang, flood memory, break the protocol, make
// forbidden system calls or ask for what is not theirs. Each costs only
// itself: its host is killed and reaped, the jobs it advised are reset to
// the defaults, the reason is in status(), and this process (the host's
// owner) carries on.
#include <sys/resource.h>

#include <optional>

#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

using nlohmann::json;

// Attaches job 1 to `policy`, moves the clock to its first tick, and polls
// until it failed. Returns the host's pid from before the failure.
pid_t attach_and_fail_on_tick(Harness& h, const std::string& policy) {
  h.owner().add_job(1);
  Status s = h.hosts().attach(policy, 1, json::object());
  EXPECT_TRUE(s.ok()) << s.error().message;
  const json before = h.status_of(policy);
  EXPECT_EQ(before["state"], "running");
  const pid_t pid = before["pid"].is_number() ? before["pid"].get<pid_t>() : -1;
  h.clock().advance_ms(kFixtureTickMs + 1);
  EXPECT_TRUE(h.poll_until([&] { return h.status_of(policy)["state"] == "failed"; })) << h.hosts().status().dump();
  return pid;
}

void expect_failed_once(Harness& h, const std::string& policy, pid_t pid, const std::string& why) {
  const json s = h.status_of(policy);
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["state"], "failed");
  EXPECT_EQ(s["failures"], 1);
  EXPECT_TRUE(s["pid"].is_null());
  ASSERT_TRUE(s["last_failure"].is_string());
  EXPECT_NE(s["last_failure"].get<std::string>().find(why), std::string::npos) << s["last_failure"];
  EXPECT_EQ(s["jobs"], json::array({1})) << "a failed policy keeps its jobs, to re-attach them";
  EXPECT_FALSE(process_exists(pid)) << "host " << pid << " was killed and reaped";
  EXPECT_EQ(h.owner().count_resets(policy, 1), 1u) << "the job went back to the defaults";
  EXPECT_TRUE(child_hosts().empty());
}

TEST(PolicyContainmentTest, CrashInTickResetsTheJobAndRestartsAfterBackoff) {
  PolicyHostsOptions o = test_options();
  o.backoff_initial_ms = 1000;
  Harness h(o);
  const pid_t pid = attach_and_fail_on_tick(h, "crash-tick");
  expect_failed_once(h, "crash-tick", pid, "killed by SIGSEGV");
  EXPECT_EQ(h.owner().count_applied("crash-tick", ActionKind::kThreads, 1), 1u) << "the first attach's advice";

  // In backoff: a new job is told so, and nothing restarts before its time.
  h.owner().add_job(2);
  Status s = h.hosts().attach("crash-tick", 2, json::object());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_POLICY_FAILED);
  EXPECT_NE(s.error().message.find("restart in"), std::string::npos) << s.error().message;
  h.clock().advance_ms(999);
  h.hosts().poll();
  EXPECT_EQ(h.status_of("crash-tick")["restarts"], 0);
  EXPECT_EQ(h.status_of("crash-tick")["state"], "failed");

  // Past the backoff: a new host, initialised, with job 1 attached again.
  h.clock().advance_ms(2);
  ASSERT_TRUE(h.poll_until([&] {
    return h.status_of("crash-tick")["state"] == "running" &&
           h.owner().count_applied("crash-tick", ActionKind::kThreads, 1) == 2;
  })) << h.hosts().status().dump();
  const json again = h.status_of("crash-tick");
  EXPECT_EQ(again["restarts"], 1);
  EXPECT_EQ(again["failures"], 1);
  ASSERT_TRUE(again["pid"].is_number());
  EXPECT_NE(again["pid"].get<pid_t>(), pid);
  EXPECT_EQ(again["jobs"], json::array({1}));
  EXPECT_EQ(h.owner().count_applied("crash-tick", ActionKind::kThreads, 2), 0u) << "job 2 was refused";
}

TEST(PolicyContainmentTest, HungTickIsKilledAtTheDeadline) {
  PolicyHostsOptions o = test_options();
  o.deadline_ms = 300;
  Harness h(o);
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("hang-tick", 1, json::object()).ok());
  const pid_t pid = h.status_of("hang-tick")["pid"].get<pid_t>();

  h.clock().advance_ms(kFixtureTickMs + 1);
  h.hosts().poll();  // sends the tick
  h.clock().advance_ms(300);
  h.hosts().poll();
  EXPECT_EQ(h.status_of("hang-tick")["state"], "running") << "not late yet: the deadline is 300 ms";
  EXPECT_TRUE(process_exists(pid));

  h.clock().advance_ms(1);
  h.hosts().poll();
  expect_failed_once(h, "hang-tick", pid, "hung: no answer to 'tick'");
}

TEST(PolicyContainmentTest, HungAttachFailsTheAttach) {
  // The real clock: attach waits in real time, and a manual clock that
  // stands still would let it wait for ever.
  PolicyHostsOptions o = test_options();
  o.deadline_ms = 300;
  Harness h(o, Harness::Clock::kReal);
  h.owner().add_job(1);
  Status s = h.hosts().attach("hang-attach", 1, json::object());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_POLICY_FAILED);
  EXPECT_NE(s.error().message.find("hung: no answer to 'attach'"), std::string::npos) << s.error().message;
  const json st = h.status_of("hang-attach");
  EXPECT_EQ(st["state"], "failed");
  EXPECT_EQ(st["jobs"], json::array({1})) << "kept, to be re-attached after the restart";
  EXPECT_EQ(h.owner().count_resets("hang-attach", 1), 1u);
  EXPECT_TRUE(child_hosts().empty()) << "the spinning host was killed and reaped";
}

// Issue 47, finding 3: mlosd waited inside its event loop for a policy's
// init (start_deadline_ms), every client with it. attach_async never waits:
// the verdict comes from a later poll(), here the start deadline's.
TEST(PolicyContainmentTest, AnAttachToAPolicyThatHangsInInitIsAnsweredLaterNotWaitedFor) {
  PolicyHostsOptions o = test_options();
  o.start_deadline_ms = 2000;
  Harness h(o);  // the manual clock: nothing times out until the test moves it
  h.owner().add_job(1);
  std::optional<Status> verdict;
  h.hosts().attach_async("hang-init", 1, json::object(), [&](Status s) { verdict = std::move(s); });
  EXPECT_FALSE(verdict.has_value()) << "returned without a verdict: nothing waited for the host";
  EXPECT_EQ(h.status_of("hang-init")["state"], "starting");
  EXPECT_EQ(h.hosts().policies_of(1), std::vector<std::string>{"hang-init"});
  for (int i = 0; i < 5; ++i) h.hosts().poll();
  EXPECT_FALSE(verdict.has_value()) << "still starting: polls do not wait either";
  h.clock().advance_ms(2001);
  ASSERT_TRUE(h.poll_until([&] { return verdict.has_value(); }));
  ASSERT_FALSE(verdict->ok());
  EXPECT_EQ(verdict->error().code, MLOS_ERR_POLICY_FAILED);
  EXPECT_NE(verdict->error().message.find("failed to start: hung: no answer to 'init'"), std::string::npos)
      << verdict->error().message;
  EXPECT_TRUE(h.hosts().policies_of(1).empty()) << "a start that failed attaches nobody";
  EXPECT_TRUE(child_hosts().empty()) << "the spinning host was killed and reaped";
}

TEST(PolicyContainmentTest, AllocationBombDiesAtItsAddressSpaceLimit) {
  rlimit ours_before{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &ours_before), 0);
  PolicyHostsOptions o = test_options();
  o.memory_limit = 128ull << 20;
  Harness h(o);
  const pid_t pid = attach_and_fail_on_tick(h, "alloc-bomb");
  // The fixture segfaults when malloc returns NULL: reaching that line is
  // the proof that RLIMIT_AS, not the machine, stopped it.
  expect_failed_once(h, "alloc-bomb", pid, "killed by SIGSEGV");

  rlimit ours_after{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &ours_after), 0);
  EXPECT_EQ(ours_after.rlim_cur, ours_before.rlim_cur) << "the limit is the host's, not ours";
  h.owner().add_job(2);
  ASSERT_TRUE(h.hosts().attach("counter", 2, json::object()).ok());
}

TEST(PolicyContainmentTest, GarbageOnTheSocketFailsTheHost) {
  Harness h;
  const pid_t pid = attach_and_fail_on_tick(h, "garbage");
  expect_failed_once(h, "garbage", pid, "malformed frame");
}

TEST(PolicyContainmentTest, ForbiddenSystemCallKillsTheHostWithSigsys) {
  Harness h;
  const pid_t pid = attach_and_fail_on_tick(h, "syscall");
  expect_failed_once(h, "syscall", pid, "killed by SIGSYS");
  EXPECT_FALSE(h.owner().logged("open returned")) << "open() must never return to the policy";
}

TEST(PolicyContainmentTest, ForkKillsTheHostWithSigsys) {
  Harness h;
  const pid_t pid = attach_and_fail_on_tick(h, "fork-bomb");
  expect_failed_once(h, "fork-bomb", pid, "killed by SIGSYS");
  EXPECT_FALSE(h.owner().logged("fork returned"));
}

TEST(PolicyContainmentTest, ActionsOutsideTheGrantAreRefusedAndCounted) {
  Harness h;
  h.owner().add_job(1);
  // The owner's grant: a thread count up to the job's CPUs.
  h.owner().grant = [&](const Action& a) -> Status {
    if (a.kind == ActionKind::kThreads && a.value > static_cast<uint64_t>(h.owner().figures[a.job].num_cpus)) {
      return make_error(MLOS_ERR_PERMISSION, "more threads than CPUs");
    }
    return Status::Ok();
  };
  ASSERT_TRUE(h.hosts().attach("out-of-grant", 1, json::object()).ok());
  ASSERT_TRUE(h.tick_once("out-of-grant"));

  const json s = h.status_of("out-of-grant");
  EXPECT_EQ(s["state"], "running") << "asking is not a failure";
  EXPECT_EQ(s["ticks"], 1);
  // A job not attached to the policy: the host refuses it (NOT_FOUND to
  // the policy) and nothing about job 1001 reaches the owner.
  EXPECT_TRUE(h.owner().logged("policy out-of-grant: foreign job 1001: " + std::to_string(MLOS_ERR_NOT_FOUND)));
  for (const auto& a : h.owner().applied) EXPECT_NE(a.action.job, 1001u);
  EXPECT_EQ(s["actions_refused"]["cpu_weight"], 0) << "it never left the host";
  // The huge thread count reaches the owner's grant check and is refused.
  EXPECT_EQ(s["actions_refused"]["threads"], 1);
  EXPECT_EQ(h.owner().count_applied("out-of-grant", ActionKind::kThreads, 1), 0u);
  EXPECT_TRUE(h.owner().logged("refused threads on job 1"));
}

TEST(PolicyContainmentTest, ForgedReplyCannotActOnAnotherJob) {
  Harness h;
  const pid_t pid = attach_and_fail_on_tick(h, "forged-reply");
  // The forged frame was taken as the tick's reply: its action on job 1 was
  // applied, the one on job 1001 refused by the manager itself.
  EXPECT_TRUE(h.owner().applied_value("forged-reply", ActionKind::kIoWeight, 1, 300));
  for (const auto& a : h.owner().applied) EXPECT_NE(a.action.job, 1001u);
  EXPECT_EQ(h.status_of("forged-reply")["actions_refused"]["cpu_weight"], 1);
  EXPECT_TRUE(h.owner().logged("refused cpu_weight on job 1001"));
  // The genuine reply that followed answered nothing: the host is failed.
  expect_failed_once(h, "forged-reply", pid, "sent a reply nobody asked for");
}

TEST(PolicyContainmentTest, ActionsForAJobDetachedMeanwhileAreRefused) {
  Harness h;
  h.owner().add_job(1);
  ASSERT_TRUE(h.hosts().attach("counter", 1, json::object()).ok());
  h.clock().advance_ms(kFixtureTickMs + 1);
  h.hosts().poll();  // the tick is sent; the host still counts job 1
  ASSERT_TRUE(h.hosts().detach("counter", 1).ok());
  EXPECT_EQ(h.owner().count_resets("counter", 1), 1u);
  ASSERT_TRUE(h.poll_until([&] { return h.status_of("counter")["ticks"] == 1; }));
  EXPECT_EQ(h.status_of("counter")["actions_refused"]["threads"], 1) << "the tick's advice came too late";
  EXPECT_EQ(h.owner().count_applied("counter", ActionKind::kThreads, 1), 0u);
  EXPECT_EQ(h.status_of("counter")["state"], "running");
}

}  // namespace
}  // namespace mlos::policy::testing
