// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "core/control_escape.h"
#include "core/phase_policy.h"
#include "mlos/version.h"

namespace mlos::daemon {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::Labels;

// A counter fed with totals: remembers the last total and adds the rise.
struct TotalCounter {
  prometheus::Counter* counter = nullptr;
  double last = 0;
};

void advance(TotalCounter& c, double total) {
  if (total > c.last) c.counter->Increment(total - c.last);
  c.last = total;
}

// The activity figures in activity_'s order, in base units.
std::array<double, 6> activity_values(const PhaseSnapshot::Activity& a) {
  return {static_cast<double>(a.collective_calls), static_cast<double>(a.collective_bytes),
          static_cast<double>(a.collective_ns) / 1e9, static_cast<double>(a.checkpoint_saves),
          static_cast<double>(a.checkpoint_bytes), static_cast<double>(a.checkpoint_ns) / 1e9};
}

// A label value from a user's text (a job's label, the cluster ids from its
// environment). The exposition format escapes only \\, \" and \n in label
// values, so ESC and the other controls would reach whoever reads the text
// on a terminal: they are escaped (ESC as the text \x1b, \n as \n; see
// core/control_escape.h), not replaced, so two labels that differ only in
// their controls still make two series.
std::string label_value(const std::string& text) { return escape_controls(text); }

}  // namespace

struct JobMetrics::JobSeries {
  Labels labels;  // job_id, label, uid: what every series of the job carries
  Labels info_labels;
  prometheus::Gauge* info = nullptr;
  prometheus::Gauge* cpus = nullptr;
  std::array<prometheus::Gauge*, MLOS_TRAINING_PHASE_COUNT> phase{};
  std::array<TotalCounter, MLOS_TRAINING_PHASE_COUNT> seconds{};
  std::array<TotalCounter, MLOS_TRAINING_PHASE_COUNT> entries{};
  TotalCounter cpu;
  TotalCounter stall;
  prometheus::Gauge* memory = nullptr;
  prometheus::Gauge* memory_limit = nullptr;
  prometheus::Gauge* pressure_level = nullptr;
  TotalCounter pressure_changes;
  std::array<TotalCounter, 6> activity{};
  std::map<std::string, prometheus::Gauge*> gpus;  // UUID -> its mlos_job_gpu_info series
  bool gpus_exclusive = false;
};

JobMetrics::JobMetrics(const std::string& commit)
    : registry_(std::make_shared<prometheus::Registry>()),
      info_(BuildGauge()
                .Name("mlos_job_info")
                .Help("A job mlosd manages; always 1. Labels: who and where (pod_uid, slurm_job_id: its cluster ids)")
                .Register(*registry_)),
      cpus_(BuildGauge().Name("mlos_job_cpus").Help("CPUs granted to the job").Register(*registry_)),
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
      gpu_info_(BuildGauge()
                    .Name("mlos_job_gpu_info")
                    .Help("A GPU the job holds; always 1. UUID as dcgm-exporter labels its series")
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
      jobs_count_(BuildGauge().Name("mlos_daemon_jobs").Help("Jobs mlosd manages").Register(*registry_).Add({})) {
  const std::array<std::pair<const char*, const char*>, 6> activity{{
      {"mlos_job_collective_calls_total", "Barriers and all-reduces the job finished"},
      {"mlos_job_collective_bytes_total", "Bytes the job's successful all-reduces reduced"},
      {"mlos_job_collective_seconds_total", "Time the job spent in barriers and all-reduces"},
      {"mlos_job_checkpoint_saves_total", "Checkpoints the job made durable"},
      {"mlos_job_checkpoint_bytes_total", "Payload bytes of the job's durable checkpoints"},
      {"mlos_job_checkpoint_seconds_total", "Time spent writing the job's checkpoints until durable"},
  }};
  for (size_t i = 0; i < activity.size(); ++i) {
    activity_[i] = &BuildCounter().Name(activity[i].first).Help(activity[i].second).Register(*registry_);
  }
  BuildGauge()
      .Name("mlos_build_info")
      .Help("Version and commit of the mlOS daemon; always 1")
      .Register(*registry_)
      .Add({{"version", MLOS_VERSION_STRING}, {"commit", commit}})
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

void JobMetrics::update(const std::vector<JobSample>& samples, const std::atomic<bool>* cancel) {
  auto cancelled = [cancel] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };
  std::map<uint64_t, const JobSample*> wanted;
  for (const auto& s : samples) wanted[s.job_id] = &s;
  jobs_count_.Set(static_cast<double>(samples.size()));
  for (auto it = jobs_.begin(); it != jobs_.end() && !cancelled();) {
    auto w = wanted.find(it->first);
    // A job gone, or one whose identity changed or totals went backwards
    // (a registry started over, reusing ids), loses its series; the
    // latter gets fresh ones below.
    bool restart = false;
    if (w != wanted.end()) {
      for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
        restart |= w->second->phase_seconds[p] < it->second->seconds[p].last;
      }
      restart |= label_value(w->second->label) != it->second->labels["label"] ||
                 std::to_string(w->second->uid) != it->second->labels["uid"];
    }
    const uint64_t job = it->first;
    ++it;
    if (w == wanted.end() || restart) drop(job);
  }
  for (const auto& s : samples) {
    if (cancelled()) return;
    update_job(s);
  }
}

void JobMetrics::update_job(const JobSample& s) {
  auto& series = jobs_[s.job_id];
  if (!series) {
    series = std::make_unique<JobSeries>();
    series->labels = {
        {"job_id", std::to_string(s.job_id)}, {"label", label_value(s.label)}, {"uid", std::to_string(s.uid)}};
    for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
      Labels with_phase = series->labels;
      with_phase["phase"] = PhasePolicy::name(p);
      series->phase[p] = &phase_.Add(with_phase);
      series->seconds[p].counter = &phase_seconds_.Add(with_phase);
      series->entries[p].counter = &transitions_.Add(with_phase);
    }
    series->cpus = &cpus_.Add(series->labels);
  }
  const Labels& labels = series->labels;
  // The info series follows what may change for a running job (its
  // exclusivity after an adoption, its cluster ids).
  Labels info = labels;
  info["exclusive"] = s.exclusive ? "true" : "false";
  info["pod_uid"] = label_value(s.pod_uid);
  info["slurm_job_id"] = label_value(s.slurm_job_id);
  if (!series->info || info != series->info_labels) {
    if (series->info) info_.Remove(series->info);
    series->info = &info_.Add(info);
    series->info->Set(1);
    series->info_labels = info;
  }
  series->cpus->Set(s.cpus);
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    series->phase[p]->Set(p == s.phase ? 1 : 0);
    advance(series->seconds[p], s.phase_seconds[p]);
    advance(series->entries[p], static_cast<double>(s.phase_entries[p]));
  }
  if (s.memory_stall_seconds) {
    if (!series->stall.counter) series->stall.counter = &memory_stall_.Add(labels);
    advance(series->stall, *s.memory_stall_seconds);
  }
  if (s.cpu_seconds) {
    if (!series->cpu.counter) series->cpu.counter = &cpu_seconds_.Add(labels);
    advance(series->cpu, *s.cpu_seconds);
  }
  if (s.memory_bytes) {
    if (!series->memory) series->memory = &memory_.Add(labels);
    series->memory->Set(static_cast<double>(*s.memory_bytes));
  }
  if (s.memory_limit_bytes) {
    if (!series->memory_limit) series->memory_limit = &memory_limit_.Add(labels);
    series->memory_limit->Set(static_cast<double>(*s.memory_limit_bytes));
  }
  if (s.memory_pressure_level) {
    if (!series->pressure_level) series->pressure_level = &pressure_level_.Add(labels);
    series->pressure_level->Set(*s.memory_pressure_level);
  }
  if (s.memory_pressure_changes) {
    if (!series->pressure_changes.counter) series->pressure_changes.counter = &pressure_changes_.Add(labels);
    advance(series->pressure_changes, static_cast<double>(*s.memory_pressure_changes));
  }
  update_gpus(*series, s);
  if (s.activity) {
    const auto values = activity_values(*s.activity);
    for (size_t i = 0; i < values.size(); ++i) {
      if (!series->activity[i].counter) series->activity[i].counter = &activity_[i]->Add(labels);
      advance(series->activity[i], values[i]);
    }
  }
}

void JobMetrics::update_gpus(JobSeries& series, const JobSample& s) {
  // Series of GPUs it no longer holds, or all when their exclusivity
  // changed (an exclusive claim booked as shared), go; new ones come.
  for (auto it = series.gpus.begin(); it != series.gpus.end();) {
    const bool held = std::find(s.gpus.begin(), s.gpus.end(), it->first) != s.gpus.end();
    if (held && series.gpus_exclusive == s.gpus_exclusive) {
      ++it;
      continue;
    }
    gpu_info_.Remove(it->second);
    it = series.gpus.erase(it);
  }
  series.gpus_exclusive = s.gpus_exclusive;
  for (const auto& uuid : s.gpus) {
    if (series.gpus.count(uuid)) continue;
    Labels l = series.labels;
    l["UUID"] = uuid;
    l["exclusive"] = s.gpus_exclusive ? "true" : "false";
    auto& g = gpu_info_.Add(l);
    g.Set(1);
    series.gpus[uuid] = &g;
  }
}

void JobMetrics::drop(uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  JobSeries& s = *it->second;
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    phase_.Remove(s.phase[p]);
    phase_seconds_.Remove(s.seconds[p].counter);
    transitions_.Remove(s.entries[p].counter);
  }
  if (s.info) info_.Remove(s.info);
  if (s.cpus) cpus_.Remove(s.cpus);
  if (s.cpu.counter) cpu_seconds_.Remove(s.cpu.counter);
  if (s.stall.counter) memory_stall_.Remove(s.stall.counter);
  if (s.memory) memory_.Remove(s.memory);
  if (s.memory_limit) memory_limit_.Remove(s.memory_limit);
  if (s.pressure_level) pressure_level_.Remove(s.pressure_level);
  if (s.pressure_changes.counter) pressure_changes_.Remove(s.pressure_changes.counter);
  for (const auto& [uuid, g] : s.gpus) gpu_info_.Remove(g);
  for (size_t i = 0; i < s.activity.size(); ++i) {
    if (s.activity[i].counter) activity_[i]->Remove(s.activity[i].counter);
  }
  jobs_.erase(it);
}

std::string JobMetrics::text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace mlos::daemon
