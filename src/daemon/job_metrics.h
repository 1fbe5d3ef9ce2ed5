// Prometheus metrics of the jobs mlosd manages, kept in a prometheus-cpp
// registry and rendered in the text exposition format (the HTTP endpoint
// comes with the daemon). Names follow Prometheus conventions: the mlos_
// prefix, base units (seconds, bytes), _total for counters.
//
//   mlos_build_info{version}                       1
//   mlos_job_phase{job,label,phase}                1 for the current phase, else 0
//   mlos_job_phase_seconds_total{job,phase}        time spent per phase
//   mlos_job_phase_transitions_total{job,phase}    entries into each phase
//   mlos_job_cpu_seconds_total{job}                CPU time of the job's cgroup
//   mlos_job_memory_stall_seconds_total{job}       memory stall time (PSI some; v2)
//   mlos_job_memory_bytes{job}                     memory charged to it
//   mlos_job_memory_limit_bytes{job}               its hard limit
//   mlos_job_memory_pressure_level{job}            0 NORMAL, 1 MODERATE, 2 CRITICAL (watched jobs)
//   mlos_job_memory_pressure_changes_total{job}    level changes so far
//
// Not thread-safe: one thread (the daemon's sampler) calls update().
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "mlos/training.h"

namespace mlos::daemon {

struct JobSample {
  std::string job;    // cgroup name, e.g. "job-7"
  std::string label;  // what the user called it
  mlos_training_phase_t phase = MLOS_TRAINING_PHASE_IDLE;
  std::array<double, MLOS_TRAINING_PHASE_COUNT> phase_seconds{};  // totals so far
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> phase_entries{};
  std::optional<double> cpu_seconds;
  std::optional<double> memory_stall_seconds;  // PSI "some" of its cgroup (v2)
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> memory_limit_bytes;
  std::optional<int> memory_pressure_level;            // jobs with a memory watch
  std::optional<uint64_t> memory_pressure_changes;
};

class JobMetrics {
 public:
  JobMetrics();
  ~JobMetrics();  // defined where JobSeries is complete

  // Brings every series to `samples`: totals become counter increments
  // (a total that went down starts a fresh series), and series of jobs not
  // in `samples` are removed.
  // `cancel` (may be null) is polled between jobs: a stopping daemon does
  // not wait for a long update to finish.
  void update(const std::vector<JobSample>& samples, const std::atomic<bool>* cancel = nullptr);
  // Daemon-wide series: requests by op (mlos_daemon_requests_total{op}),
  // connected clients (mlos_daemon_clients), and the node's cumulative
  // memory stall time from PSI (mlos_node_memory_stall_seconds_total{kind}).
  void count_request(const std::string& op);
  void set_clients(int clients);
  void set_memory_stall(double some_seconds, double full_seconds);
  std::string text() const;
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  struct JobSeries;
  void drop(const std::string& job);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Counter>& phase_seconds_;
  prometheus::Family<prometheus::Counter>& transitions_;
  prometheus::Family<prometheus::Counter>& memory_stall_;
  prometheus::Family<prometheus::Counter>& cpu_seconds_;
  prometheus::Family<prometheus::Gauge>& memory_;
  prometheus::Family<prometheus::Gauge>& memory_limit_;
  prometheus::Family<prometheus::Gauge>& pressure_level_;
  prometheus::Family<prometheus::Counter>& pressure_changes_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Gauge& clients_;
  prometheus::Family<prometheus::Counter>& stall_;
  std::map<std::string, prometheus::Counter*> request_series_;
  double stall_seen_[2] = {0, 0};
  std::map<std::string, std::unique_ptr<JobSeries>> jobs_;
};

}  // namespace mlos::daemon
