#include "daemon/job_metrics.h"

#include <prometheus/text_serializer.h>

#include <set>
#include <sstream>

#include "core/phase_policy.h"

namespace mlos::daemon {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

// A counter fed with totals: remembers the last total and adds the rise.
struct TotalCounter {
  prometheus::Counter* counter = nullptr;
  double last = 0;
};

}  // namespace

struct JobMetrics::JobSeries {
  std::string label;
  std::array<prometheus::Gauge*, MLOS_TRAINING_PHASE_COUNT> phase{};
  std::array<TotalCounter, MLOS_TRAINING_PHASE_COUNT> seconds{};
  std::array<TotalCounter, MLOS_TRAINING_PHASE_COUNT> entries{};
  TotalCounter cpu;
  TotalCounter stall;
  prometheus::Gauge* memory = nullptr;
  prometheus::Gauge* memory_limit = nullptr;
  prometheus::Gauge* pressure_level = nullptr;
  TotalCounter pressure_changes;
};

JobMetrics::JobMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      phase_(BuildGauge().Name("mlos_job_phase").Help("1 for the phase the job is in, 0 for the others").Register(*registry_)),
      phase_seconds_(BuildCounter()
                         .Name("mlos_job_phase_seconds_total")
                         .Help("Seconds the job has spent in each training phase")
                         .Register(*registry_)),
      transitions_(BuildCounter()
                       .Name("mlos_job_phase_transitions_total")
                       .Help("Times the job entered each training phase")
                       .Register(*registry_)),
      memory_stall_(BuildCounter()
                        .Name("mlos_job_memory_stall_seconds_total")
                        .Help("Time the job's tasks stalled on memory (PSI some of its cgroup; cgroup v2 only)")
                        .Register(*registry_)),
      cpu_seconds_(BuildCounter()
                       .Name("mlos_job_cpu_seconds_total")
                       .Help("CPU time used by the job's cgroup")
                       .Register(*registry_)),
      memory_(BuildGauge().Name("mlos_job_memory_bytes").Help("Memory charged to the job's cgroup").Register(*registry_)),
      memory_limit_(BuildGauge()
                        .Name("mlos_job_memory_limit_bytes")
                        .Help("Hard memory limit of the job's cgroup")
                        .Register(*registry_)),
      pressure_level_(BuildGauge()
                          .Name("mlos_job_memory_pressure_level")
                          .Help("Memory-pressure level of the job: 0 NORMAL, 1 MODERATE, 2 CRITICAL")
                          .Register(*registry_)),
      pressure_changes_(BuildCounter()
                            .Name("mlos_job_memory_pressure_changes_total")
                            .Help("Memory-pressure level changes of the job")
                            .Register(*registry_)),
      requests_(BuildCounter()
                    .Name("mlos_daemon_requests_total")
                    .Help("Control-socket requests handled, by op (malformed: frames that closed the connection)")
                    .Register(*registry_)),
      clients_(BuildGauge()
                   .Name("mlos_daemon_clients")
                   .Help("Connected control-socket clients")
                   .Register(*registry_)
                   .Add({})),
      stall_(BuildCounter()
                 .Name("mlos_node_memory_stall_seconds_total")
                 .Help("Time tasks stalled on memory on this node (PSI /proc/pressure/memory; kind some or full)")
                 .Register(*registry_)) {
  BuildGauge()
      .Name("mlos_build_info")
      .Help("Version of the mlOS daemon; always 1")
      .Register(*registry_)
      .Add({{"version", MLOS_VERSION_STRING}})
      .Set(1);
}

JobMetrics::~JobMetrics() = default;

void JobMetrics::count_request(const std::string& op) {
  // Bounded label values: unknown ops are counted together.
  static const std::set<std::string> known{"hello", "status", "metrics", "request", "release",
                                           "phase", "attach", "malformed"};
  const std::string key = known.count(op) ? op : "unknown";
  auto it = request_series_.find(key);
  if (it == request_series_.end()) it = request_series_.emplace(key, &requests_.Add({{"op", key}})).first;
  it->second->Increment();
}

void JobMetrics::set_clients(int clients) { clients_.Set(clients); }

void JobMetrics::set_memory_stall(double some_seconds, double full_seconds) {
  const double totals[2] = {some_seconds, full_seconds};
  const char* kinds[2] = {"some", "full"};
  for (int i = 0; i < 2; ++i) {
    auto& c = stall_.Add({{"kind", kinds[i]}});
    if (totals[i] > stall_seen_[i]) c.Increment(totals[i] - stall_seen_[i]);
    stall_seen_[i] = totals[i];
  }
}

namespace {
void advance(TotalCounter& c, double total) {
  if (total > c.last) c.counter->Increment(total - c.last);
  c.last = total;
}
}  // namespace

void JobMetrics::update(const std::vector<JobSample>& samples, const std::atomic<bool>* cancel) {
  auto cancelled = [cancel] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };
  std::map<std::string, const JobSample*> wanted;
  for (const auto& s : samples) wanted[s.job] = &s;
  for (auto it = jobs_.begin(); it != jobs_.end() && !cancelled();) {
    auto w = wanted.find(it->first);
    // A job gone, or one whose totals went backwards (a new job reusing the
    // name), loses its series; the latter gets fresh ones below.
    bool restart = false;
    if (w != wanted.end()) {
      for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
        restart |= w->second->phase_seconds[p] < it->second->seconds[p].last;
      }
      restart |= w->second->label != it->second->label;
    }
    if (w == wanted.end() || restart) {
      const std::string job = it->first;
      ++it;
      drop(job);
    } else {
      ++it;
    }
  }
  for (const auto& s : samples) {
    if (cancelled()) return;
    auto& series = jobs_[s.job];
    if (!series) {
      series = std::make_unique<JobSeries>();
      series->label = s.label;
      for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
        const std::string name = PhasePolicy::name(p);
        series->phase[p] = &phase_.Add({{"job", s.job}, {"label", s.label}, {"phase", name}});
        series->seconds[p].counter = &phase_seconds_.Add({{"job", s.job}, {"phase", name}});
        series->entries[p].counter = &transitions_.Add({{"job", s.job}, {"phase", name}});
      }
    }
    for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
      series->phase[p]->Set(p == s.phase ? 1 : 0);
      advance(series->seconds[p], s.phase_seconds[p]);
      advance(series->entries[p], static_cast<double>(s.phase_entries[p]));
    }
    if (s.memory_stall_seconds) {
      if (!series->stall.counter) series->stall.counter = &memory_stall_.Add({{"job", s.job}});
      advance(series->stall, *s.memory_stall_seconds);
    }
    if (s.cpu_seconds) {
      if (!series->cpu.counter) series->cpu.counter = &cpu_seconds_.Add({{"job", s.job}});
      advance(series->cpu, *s.cpu_seconds);
    }
    if (s.memory_bytes) {
      if (!series->memory) series->memory = &memory_.Add({{"job", s.job}});
      series->memory->Set(static_cast<double>(*s.memory_bytes));
    }
    if (s.memory_limit_bytes) {
      if (!series->memory_limit) series->memory_limit = &memory_limit_.Add({{"job", s.job}});
      series->memory_limit->Set(static_cast<double>(*s.memory_limit_bytes));
    }
    if (s.memory_pressure_level) {
      if (!series->pressure_level) series->pressure_level = &pressure_level_.Add({{"job", s.job}});
      series->pressure_level->Set(*s.memory_pressure_level);
    }
    if (s.memory_pressure_changes) {
      if (!series->pressure_changes.counter) series->pressure_changes.counter = &pressure_changes_.Add({{"job", s.job}});
      advance(series->pressure_changes, static_cast<double>(*s.memory_pressure_changes));
    }
  }
}

void JobMetrics::drop(const std::string& job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  JobSeries& s = *it->second;
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    phase_.Remove(s.phase[p]);
    phase_seconds_.Remove(s.seconds[p].counter);
    transitions_.Remove(s.entries[p].counter);
  }
  if (s.cpu.counter) cpu_seconds_.Remove(s.cpu.counter);
  if (s.stall.counter) memory_stall_.Remove(s.stall.counter);
  if (s.memory) memory_.Remove(s.memory);
  if (s.memory_limit) memory_limit_.Remove(s.memory_limit);
  if (s.pressure_level) pressure_level_.Remove(s.pressure_level);
  if (s.pressure_changes.counter) pressure_changes_.Remove(s.pressure_changes.counter);
  jobs_.erase(it);
}

std::string JobMetrics::text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace mlos::daemon
