// SPDX-License-Identifier: Apache-2.0
#include "engine/embedded_policies.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "core/phase_page.h"
#include "engine/embedded_policy_config.h"
#include "engine/job.h"
#include "engine/policy_report_file.h"
#include "engine/sampled_pressure.h"
#include "os/cpu_times.h"
#include "os/ledger_file.h"
#include "os/log_sink.h"
#include "os/monotonic_clock.h"
#include "os/process_memory.h"
#include "os/unique_fd.h"
#include "policy/job_policy_requests.h"
#include "policy/policy_grant.h"

namespace mlos {

using nlohmann::json;

namespace {

// A job's phases, written by the job (PhaseSink::publish, under its mutex)
// and read by the policy thread: a phase page in this process's memory. Its
// activity counters grow from any thread of the job (relaxed adds).
class PhaseFollower final : public PhaseSink {
 public:
  explicit PhaseFollower(uint64_t now_ns)
      : page_(static_cast<PhasePageLayout*>(std::calloc(1, sizeof(PhasePageLayout)))) {
    if (page_ == nullptr) throw std::bad_alloc();
    writer_.emplace(page_, now_ns);
  }
  ~PhaseFollower() override { std::free(page_); }
  void publish(mlos_training_phase_t phase, uint64_t now_ns) override { writer_->publish(phase, now_ns); }
  void count_collective(uint64_t bytes, uint64_t ns) override { writer_->count_collective(bytes, ns); }
  void count_checkpoint(uint64_t bytes, uint64_t ns) override { writer_->count_checkpoint(bytes, ns); }
  std::optional<PhaseSnapshot> read() const { return PhasePageReader(page_).read(); }

 private:
  PhasePageLayout* page_;
  std::optional<PhasePageWriter> writer_;
};

std::optional<double> own_cpu_seconds() {
  auto s = os::process_cpu_seconds(getpid());
  return s ? std::optional<double>(*s) : std::nullopt;
}

std::optional<double> busy_seconds(const CpuSet& cpus) {
  auto s = os::cpu_busy_seconds(cpus);
  return s ? std::optional<double>(*s) : std::nullopt;
}

std::optional<uint64_t> own_resident_bytes() {
  auto bytes = os::process_resident_bytes(getpid());
  return bytes ? std::optional<uint64_t>(*bytes) : std::nullopt;
}

Error unknown_job(uint64_t job) {
  return make_error(MLOS_ERR_INVALID_HANDLE, "claim " + std::to_string(job) + " has no policies in this process");
}

}  // namespace

struct EmbeddedPolicies::State {
  struct Served {
    JobGrant grant;
    std::shared_ptr<PhaseFollower> phases;
    std::shared_ptr<ReadLog> reads;
    std::function<std::optional<int>()> pressure;
    mlos_training_phase_t told = MLOS_TRAINING_PHASE_IDLE;  // the phase the policies last heard of
    policy::PolicyGrant policy;          // what its policies set and asked for
    std::string report_dir;              // where its report file goes; "": none
  };

  // Guarded by mu: the work queue and the stop flag.
  std::mutex mu;
  std::deque<std::function<void()>> tasks;
  bool stopping = false;
  os::UniqueFd wake;
  std::thread::id thread_id;
  std::thread thread;

  // The policy thread's own (no lock).
  std::map<uint64_t, Served> jobs;
  std::set<std::string> defaults_logged;
  std::unique_ptr<policy::PolicyHosts> hosts;
  std::deque<policy::JobPolicyOp> job_policy_ops;
  json report_of(uint64_t id, const Served& j) const {
    json out = j.policy.requests().report();
    out["job"] = id;
    return out;
  }
  // Rewrites the job's report file, if reports are kept in files.
  void publish(uint64_t id, const Served& j) const {
    if (j.report_dir.empty()) return;
    json r = report_of(id, j);
    r["pid"] = getpid();
    r["updated_unix"] = static_cast<int64_t>(time(nullptr));
    if (Status st = write_policy_report(j.report_dir, id, r); !st) {
      log_message(MLOS_LOG_DEBUG, "policy report of job " + std::to_string(id) + ": " + st.error().message);
    }
  }
  // Applies the queued requests and releases (policy thread).
  void run_job_policy_ops();

  void poke() const {
    const uint64_t one = 1;
    (void)!write(wake.get(), &one, sizeof one);
  }
};

EmbeddedPolicies::EmbeddedPolicies(Options options) : o_(std::move(options)), s_(std::make_unique<State>()) {
  if (!o_.process_cpu_seconds) o_.process_cpu_seconds = own_cpu_seconds;
  if (!o_.cpu_busy_seconds) o_.cpu_busy_seconds = busy_seconds;
  if (!o_.resident_bytes) o_.resident_bytes = own_resident_bytes;
  if (!o_.pressure_level) {
    o_.pressure_level = [](uint64_t memory_bytes) { return sampled_pressure(memory_bytes, kPressureSampleMs); };
  }
  s_->wake = os::UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s_->wake.valid()) throw std::system_error(errno, std::generic_category(), "eventfd");

  policy::PolicyHosts::Callbacks cb;
  State* s = s_.get();
  cb.now_ns = [] { return os::monotonic_ns(); };
  cb.figures = [this, s](uint64_t id) -> std::optional<mlos_policy_job_figures_t> {
    auto it = s->jobs.find(id);
    if (it == s->jobs.end()) return std::nullopt;
    const State::Served& j = it->second;
    policy::JobFigureSources in;
    in.job = id;
    in.now_ns = os::monotonic_ns();
    if (auto snap = j.phases->read()) {
      in.phase = snap->phase;
      for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
        in.phase_seconds[p] = static_cast<double>(snap->nanoseconds_at(p, in.now_ns)) / 1e9;
        in.phase_entries[p] = snap->entries[p];
      }
    }
    // Like its CPU time, the job's collectives are the process's: a DDP
    // rank's training job and its process group's job (the torch backend's
    // own allocation) both see the rank's time in all-reduces.
    uint64_t collective_ns = 0;
    for (const auto& [other_id, other] : s->jobs) {
      if (auto snap = other.phases->read(); snap && snap->activity) collective_ns += snap->activity->collective_ns;
    }
    in.collective_seconds = static_cast<double>(collective_ns) / 1e9;
    in.priority = j.grant.priority;
    in.cpus = j.grant.cpus;
    in.primary_node = j.grant.primary_node;
    in.recommended_threads = j.grant.recommended_threads;
    // The job is this process (every job of the process, if it has several).
    in.cpu_seconds = in.owner_cpu_seconds = o_.process_cpu_seconds();
    in.cpus_busy_seconds = o_.cpu_busy_seconds(j.grant.cpus);
    in.memory_bytes = o_.resident_bytes();
    in.memory_limit_bytes = j.grant.memory_bytes;
    if (j.pressure) in.memory_pressure_level = j.pressure();
    return policy::job_figures(in);
  };
  cb.apply = [s](const std::string& by, const policy::Action& a) -> Status {
    auto it = s->jobs.find(a.job);
    if (it == s->jobs.end()) return make_error(MLOS_ERR_NOT_FOUND, "job " + std::to_string(a.job) + " is gone");
    State::Served& j = it->second;
    policy::GrantScope scope;
    scope.cpus = j.grant.cpus.count();
    scope.uid = geteuid();
    scope.memory_limit = j.grant.memory_bytes;
    scope.no_cgroups = "an embedded job has no cgroup of its own (mlosd gives it one)";
    auto granted = j.policy.grant(by, a, scope, s->job_policy_ops);
    if (!granted) return granted.error();
    if (*granted == policy::PolicyGranted::kReport) s->publish(a.job, j);
    return Status::Ok();
  };
  cb.reads = [s](const std::string& by, uint64_t id, policy::ReadBudget budget) -> std::optional<policy::JobReads> {
    auto it = s->jobs.find(id);
    if (it == s->jobs.end() || !it->second.reads) return std::nullopt;
    return it->second.reads->take(by, id, budget);
  };
  cb.reset = [s](const std::string& by, uint64_t id) {
    auto it = s->jobs.find(id);
    if (it == s->jobs.end()) return;
    State::Served& j = it->second;
    if (j.policy.take_back(by, id, s->job_policy_ops).report) s->publish(id, j);
  };
  s_->hosts = std::make_unique<policy::PolicyHosts>(o_.hosts, std::move(cb));
  s_->thread = std::thread([this] { loop(); });
  s_->thread_id = s_->thread.get_id();
}

EmbeddedPolicies::~EmbeddedPolicies() {
  {
    std::lock_guard lock(s_->mu);
    s_->stopping = true;
  }
  s_->poke();
  if (s_->thread.joinable()) s_->thread.join();
}

void EmbeddedPolicies::run(std::function<void()> work) {
  if (std::this_thread::get_id() == s_->thread_id) {
    work();  // already on the policy thread (a callback)
    return;
  }
  std::promise<void> done;
  auto finished = done.get_future();
  {
    std::lock_guard lock(s_->mu);
    s_->tasks.push_back([&] {
      try {
        work();
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
  }
  s_->poke();
  finished.get();
}

void EmbeddedPolicies::loop() {
  pthread_setname_np(pthread_self(), "mlos-policies");
  State& s = *s_;
  for (;;) {
    std::deque<std::function<void()>> tasks;
    bool stopping;
    {
      std::lock_guard lock(s.mu);
      tasks.swap(s.tasks);
      stopping = s.stopping;
    }
    for (auto& t : tasks) t();  // each catches its own exceptions (run())
    if (stopping) break;
    // The thread must outlive anything a host sends: callers wait on it.
    try {
      s.hosts->poll();
      s.run_job_policy_ops();
      for (auto& [id, j] : s.jobs) {
        auto snap = j.phases->read();
        if (!snap || snap->phase == j.told) continue;
        const mlos_training_phase_t old = j.told;
        j.told = snap->phase;
        s.hosts->phase_changed(id, old, snap->phase);
      }
    } catch (const std::exception& e) {
      log_message(MLOS_LOG_ERROR, std::string("policy thread: ") + e.what());
    }
    std::vector<pollfd> fds{{s.wake.get(), POLLIN, 0}};
    for (int fd : s.hosts->fds()) fds.push_back({fd, POLLIN, 0});
    // No policy loaded: nobody to tell of a phase, no tick, no restart due;
    // sleep until a caller brings work.
    const int timeout = s.hosts->idle() ? -1 : kFollowMs;
    (void)poll(fds.data(), fds.size(), timeout);
    uint64_t count = 0;
    (void)!read(s.wake.get(), &count, sizeof count);
  }
  s.hosts.reset();  // stops the hosts from the thread that started them
}

void EmbeddedPolicies::State::run_job_policy_ops() {
  policy::run_job_policy_ops(
      job_policy_ops, *hosts,
      [this](uint64_t id) -> policy::JobPolicyRequests* {
        auto it = jobs.find(id);
        return it == jobs.end() ? nullptr : &it->second.policy.requests();
      },
      [this](uint64_t id) { publish(id, jobs.at(id)); });
}

std::shared_ptr<PhaseSink> EmbeddedPolicies::make_phase_sink(uint64_t now_ns) {
  return std::make_shared<PhaseFollower>(now_ns);
}

Status EmbeddedPolicies::add_job(uint64_t job, const JobGrant& grant, std::shared_ptr<PhaseSink> phases,
                                 std::shared_ptr<ReadLog> reads) {
  if (job == 0) {
    return make_error(MLOS_ERR_UNSUPPORTED, "the claim was not recorded in the ledger, so no policy can serve it");
  }
  auto follower = std::dynamic_pointer_cast<PhaseFollower>(phases);
  if (!follower) return make_error(MLOS_ERR_INVALID_ARGUMENT, "the phase sink was not made by make_phase_sink()");
  Status out = Status::Ok();
  run([&] {
    if (s_->jobs.count(job)) {
      // A claim id seen twice (the ledger was recreated under a live job):
      // sharing the old job's registration would mix their policies.
      out = make_error(MLOS_ERR_INVALID_ARGUMENT, "claim " + std::to_string(job) + " is already registered");
      return;
    }
    State::Served j;
    j.grant = grant;
    j.phases = std::move(follower);
    j.reads = std::move(reads);
    j.pressure = o_.pressure_level(grant.memory_bytes);
    if (o_.report_dir) j.report_dir = o_.report_dir();
    s_->jobs.emplace(job, std::move(j));
  });
  return out;
}

void EmbeddedPolicies::attach_defaults(uint64_t job) {
  run([&] {
    State& s = *s_;
    if (!s.jobs.count(job)) return;
    const auto used = s.hosts->policies_of(job);
    for (const std::string& name : o_.defaults) {
      if (std::find(used.begin(), used.end(), name) != used.end()) continue;
      Status st = s.hosts->attach(name, job, json::object());
      if (!st && s.defaults_logged.insert(name).second) {
        log_message(MLOS_LOG_WARN, "default policy " + name + " not attached: " + st.error().describe() +
                                       " (MLOS_DEFAULT_POLICIES sets the defaults)");
      }
    }
  });
}

void EmbeddedPolicies::remove_job(uint64_t job) {
  run([&] {
    if (!s_->jobs.count(job)) return;
    s_->hosts->detach_job(job);
    const std::string report_dir = s_->jobs.at(job).report_dir;
    s_->jobs.erase(job);
    if (!report_dir.empty()) remove_policy_report(report_dir, job);
  });
}

Result<std::vector<std::string>> EmbeddedPolicies::request(uint64_t job, const std::string& name, const json& config) {
  Result<std::vector<std::string>> out = unknown_job(job);
  run([&] {
    auto it = s_->jobs.find(job);
    if (it == s_->jobs.end()) return;
    if (Status st = s_->hosts->attach(name, job, config); !st) {
      out = st.error();
      return;
    }
    if (it->second.policy.requests().owner_took(name)) s_->publish(job, it->second);
    out = s_->hosts->policies_of(job);
  });
  return out;
}

Status EmbeddedPolicies::release(uint64_t job, const std::string& name) {
  Status out = unknown_job(job);
  run([&] {
    auto it = s_->jobs.find(job);
    if (it == s_->jobs.end()) return;
    out = s_->hosts->detach(name, job);
    if (out && it->second.policy.requests().owner_took(name)) s_->publish(job, it->second);
  });
  return out;
}

Result<PolicyAdvice> EmbeddedPolicies::advice(uint64_t job) {
  Result<PolicyAdvice> out = unknown_job(job);
  run([&] {
    auto it = s_->jobs.find(job);
    if (it == s_->jobs.end()) return;
    const State::Served& j = it->second;
    PolicyAdvice a;
    const auto& t = j.policy.effects().threads;
    a.threads = j.policy.threads(j.grant.recommended_threads);
    a.threads_advised = t.value.has_value();
    a.threads_by = t.value ? t.by : "";
    a.policies = s_->hosts->policies_of(job);
    for (auto& [name, why] : s_->hosts->failed_policies_of(job)) a.failed.push_back(FailedPolicy{name, why});
    out = std::move(a);
  });
  return out;
}

Result<json> EmbeddedPolicies::report(uint64_t job) {
  Result<json> out = unknown_job(job);
  run([&] {
    auto it = s_->jobs.find(job);
    if (it != s_->jobs.end()) out = s_->report_of(job, it->second);
  });
  return out;
}

json EmbeddedPolicies::status() {
  json out;
  run([&] {
    out = s_->hosts->overview();
    out["host"] = o_.hosts.host_binary;
    out["defaults"] = o_.defaults;
  });
  return out;
}

Result<std::shared_ptr<EmbeddedPolicies>> EmbeddedPolicies::for_this_process() {
  static std::mutex mu;
  // Never destroyed: at exit the hosts die with the policy thread
  // (PR_SET_PDEATHSIG), and a forked child must not join its parent's
  // thread or kill its parent's hosts, so it leaves the inherited one alone.
  static std::shared_ptr<EmbeddedPolicies>* service = nullptr;
  static pid_t owner = 0;
  std::lock_guard lock(mu);
  if (service != nullptr && owner == getpid()) return *service;
  auto config = embedded_policy_config();
  if (!config) return config.error();
  Options o;
  o.hosts.host_binary = config->host_binary;
  o.hosts.policy_dir = config->policy_dir;
  o.hosts.also_trusted = geteuid();
  o.defaults = config->defaults;
  o.every_job = config->every_job;
  // The runtime directory of the process's ledger, which is also fixed at
  // its first request: reports lie beside the claims they belong to.
  o.report_dir = [dir = policy_report_dir(os::default_runtime_dir())] { return dir; };
  try {
    service = new std::shared_ptr<EmbeddedPolicies>(std::make_shared<EmbeddedPolicies>(std::move(o)));
  } catch (const std::exception& e) {  // eventfd or the thread could not be made
    return make_error(MLOS_ERR_SYSTEM, std::string("cannot start the policy thread: ") + e.what());
  }
  owner = getpid();
  return *service;
}

}  // namespace mlos
