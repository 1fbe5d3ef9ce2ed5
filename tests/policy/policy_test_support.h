/* SPDX-License-Identifier: Apache-2.0 */
// What the policy tests share: a PolicyHosts whose callbacks record every
// apply and reset, serve figures from a table and read a clock the test
// moves by hand, plus helpers to poll until something happens.
//
// The clock: most tests use a manual clock, so that ticks, deadlines,
// backoff and grace periods happen exactly when a test moves time, never
// because the machine was slow. While a manual clock stands still the
// manager waits for a reply as long as it takes (its deadlines are in the
// clock's time), so a test that expects a host to hang in a synchronous
// call (attach) uses the real clock and a short deadline instead.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/read_log.h"
#include "os/monotonic_clock.h"
#include "policy/policy_hosts.h"

namespace mlos::policy::testing {

// fixtures/fixture_policy.h: FIXTURE_TICK_MS.
constexpr uint64_t kFixtureTickMs = 60000;

using ManualClock = os::ManualClock;

struct AppliedAction {
  std::string policy;
  Action action;
};

// Everything the manager told its owner, and the owner's side: the jobs'
// figures and the grant check that apply() makes.
struct Owner {
  std::map<uint64_t, mlos_policy_job_figures_t> figures;
  std::vector<AppliedAction> applied;
  std::vector<std::pair<std::string, uint64_t>> resets;
  std::vector<std::string> logs;  // the library's log lines (PolicyHosts logs the policies' lines)
  // Jobs with a read log (the policies' read_log); the others have none.
  std::map<uint64_t, std::shared_ptr<ReadLog>> read_logs;
  // The grant: an error refuses the action (it is then not in `applied`).
  std::function<Status(const Action&)> grant = [](const Action&) { return Status::Ok(); };

  // A job on CPUs 0-3, priority 0, idle.
  void add_job(uint64_t job, int priority = 0);
  // How many applied actions match.
  size_t count_applied(const std::string& policy, ActionKind kind, uint64_t job) const;
  bool applied_value(const std::string& policy, ActionKind kind, uint64_t job, uint64_t value) const;
  size_t count_resets(const std::string& policy, uint64_t job) const;
  bool logged(const std::string& fragment) const;
};

// Options for tests: the built host, `dir`, deadlines generous enough for
// a starved machine (tests that want a hang set their own).
PolicyHostsOptions test_options(const std::string& dir = MLOS_TEST_POLICY_DIR);

// A PolicyHosts wired to an Owner and a ManualClock (or the real clock).
// Installs a log handler that copies lines into owner.logs; one per test.
class Harness {
 public:
  enum class Clock { kManual, kReal };
  explicit Harness(PolicyHostsOptions options = test_options(), Clock clock = Clock::kManual);
  ~Harness();
  Harness(const Harness&) = delete;  // the callbacks point into it
  Harness& operator=(const Harness&) = delete;

  PolicyHosts& hosts() { return *hosts_; }
  Owner& owner() { return owner_; }
  ManualClock& clock() { return clock_; }

  // status() of `name`, or null when it is not loaded.
  nlohmann::json status_of(const std::string& name) const;
  // Calls poll() until `done()` holds, for at most `limit` of real time
  // (generous: it is a bound on a broken test, not a performance claim).
  bool poll_until(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(60));
  // Moves the clock past the policy's next tick (fixtures tick every
  // kFixtureTickMs) and polls until it has ticked once more or failed.
  bool tick_once(const std::string& name);

 private:
  Owner owner_;
  ManualClock clock_;
  std::unique_ptr<PolicyHosts> hosts_;
};

// Whether a process with this pid exists (zombies included).
bool process_exists(pid_t pid);
// The pids of this process's children whose command is mlos-policyhost.
std::vector<pid_t> child_hosts();

}  // namespace mlos::policy::testing
