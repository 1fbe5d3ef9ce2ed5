// SPDX-License-Identifier: Apache-2.0
#include "policy_test_support.h"

#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "mlos/log.h"

namespace mlos::policy::testing {

void Owner::add_job(uint64_t job, int priority) {
  mlos_policy_job_figures_t f = empty_figures(job);
  f.priority = priority;
  f.phase = MLOS_TRAINING_PHASE_IDLE;
  f.num_cpus = 4;
  std::strcpy(f.cpus, "0-3");
  f.recommended_threads = 4;
  f.memory_limit_bytes = 1ull << 30;
  figures[job] = f;
}

size_t Owner::count_applied(const std::string& policy, ActionKind kind, uint64_t job) const {
  size_t n = 0;
  for (const auto& a : applied) n += a.policy == policy && a.action.kind == kind && a.action.job == job;
  return n;
}

bool Owner::applied_value(const std::string& policy, ActionKind kind, uint64_t job, uint64_t value) const {
  for (const auto& a : applied) {
    if (a.policy == policy && a.action.kind == kind && a.action.job == job && a.action.value == value) return true;
  }
  return false;
}

size_t Owner::count_resets(const std::string& policy, uint64_t job) const {
  size_t n = 0;
  for (const auto& r : resets) n += r.first == policy && r.second == job;
  return n;
}

bool Owner::logged(const std::string& fragment) const {
  for (const auto& l : logs) {
    if (l.find(fragment) != std::string::npos) return true;
  }
  return false;
}

PolicyHostsOptions test_options(const std::string& dir) {
  PolicyHostsOptions o;
  o.host_binary = MLOS_POLICYHOST_PATH;
  o.policy_dir = dir;
  if (geteuid() != 0) o.also_trusted = geteuid();  // the build tree is the user's
  o.deadline_ms = 30000;
  o.start_deadline_ms = 60000;
  return o;
}

namespace {

uint64_t real_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
}

void copy_log(mlos_log_level_t, const char* message, void* owner) {
  static_cast<Owner*>(owner)->logs.emplace_back(message);
}

}  // namespace

Harness::Harness(PolicyHostsOptions options, Clock clock) {
  mlos_set_log_handler(copy_log, MLOS_LOG_DEBUG, &owner_);
  PolicyHosts::Callbacks cb;
  cb.figures = [this](uint64_t job) -> std::optional<mlos_policy_job_figures_t> {
    auto it = owner_.figures.find(job);
    if (it == owner_.figures.end()) return std::nullopt;
    return it->second;
  };
  cb.apply = [this](const std::string& policy, const Action& a) -> Status {
    Status s = owner_.grant(a);
    if (s) owner_.applied.push_back(AppliedAction{policy, a});
    return s;
  };
  cb.reset = [this](const std::string& policy, uint64_t job) { owner_.resets.emplace_back(policy, job); };
  cb.reads = [this](const std::string& policy, uint64_t job, ReadBudget budget) -> std::optional<JobReads> {
    auto it = owner_.read_logs.find(job);
    if (it == owner_.read_logs.end()) return std::nullopt;
    return it->second->take(policy, job, budget);
  };
  if (clock == Clock::kManual) {
    cb.now_ns = [this] { return clock_.now_ns(); };
  } else {
    cb.now_ns = real_now_ns;
  }
  hosts_ = std::make_unique<PolicyHosts>(std::move(options), std::move(cb));
}

Harness::~Harness() {
  hosts_.reset();  // stops the hosts while the log handler still points here
  mlos_set_log_handler(nullptr, MLOS_LOG_ERROR, nullptr);
}

nlohmann::json Harness::status_of(const std::string& name) const {
  for (const auto& s : hosts_->status()) {
    if (s["name"] == name) return s;
  }
  return nullptr;
}

bool Harness::poll_until(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    hosts_->poll();
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool Harness::tick_once(const std::string& name) {
  const nlohmann::json before = status_of(name);
  if (before.is_null()) return false;
  const uint64_t ticks = before["ticks"].get<uint64_t>(), failures = before["failures"].get<uint64_t>();
  clock_.advance_ms(kFixtureTickMs + 1);
  return poll_until([&] {
    const nlohmann::json s = status_of(name);
    return s.is_null() || s["ticks"].get<uint64_t>() > ticks || s["failures"].get<uint64_t>() > failures;
  });
}

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

std::vector<pid_t> child_hosts() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    const std::string comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    // comm is cut at 15 characters: "mlos-policyhost" fits exactly.
    if (ppid == getpid() && comm == "mlos-policyhost") out.push_back(pid);
  }
  closedir(d);
  return out;
}

}  // namespace mlos::policy::testing
