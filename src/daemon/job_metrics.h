/* SPDX-License-Identifier: Apache-2.0 */
// Prometheus metrics of the jobs mlosd manages, kept in a prometheus-cpp
// registry and rendered in the text exposition format (served by
// daemon/metrics_endpoint.h). Names follow Prometheus conventions: the
// mlos_ prefix, base units (seconds, bytes), _total for counters. Every
// per-job series carries job_id, label and uid ("job" is Prometheus' own
// target label: a series labelled job would be renamed exported_job).
// Label values from users' text (label, pod_uid, slurm_job_id) have their
// control characters escaped (core/control_escape.h).
// docs/monitoring.md lists them; node-wide PSI is node_exporter's
// (node_pressure_*), not repeated here.
//
//   mlos_build_info{version,commit}                      1
//   mlos_daemon_requests_total{op}, mlos_daemon_clients, mlos_daemon_jobs
//   mlos_job_info{job_id,label,uid,exclusive,pod_uid,slurm_job_id}  1
//   mlos_job_cpus{job_id,label,uid}                      CPUs granted
//   mlos_job_phase{...,phase}                            1 for the current phase, else 0
//   mlos_job_phase_seconds_total{...,phase}              time spent per phase
//   mlos_job_phase_transitions_total{...,phase}          entries into each phase
//   mlos_job_cpu_seconds_total, mlos_job_memory_bytes, mlos_job_memory_limit_bytes,
//   mlos_job_memory_stall_seconds_total (PSI some of its cgroup; v2),
//   mlos_job_memory_pressure_level (0 NORMAL, 1 MODERATE, 2 CRITICAL; watched jobs),
//   mlos_job_memory_pressure_changes_total
//   mlos_job_collective_{calls,bytes,seconds}_total      barriers and all-reduces
//   mlos_job_checkpoint_{saves,bytes,seconds}_total      durable checkpoint saves
//   mlos_job_gpu_info{job_id,label,uid,UUID,exclusive}   1 per GPU the job holds: UUID is
//                                                        dcgm-exporter's label, so its per-GPU
//                                                        series join a job's (docs/monitoring.md)
//
// Not thread-safe: one thread (the daemon's metrics updater) calls update().
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

#include "core/claim_ledger.h"
#include "core/phase_page.h"
#include "mlos/training.h"

namespace mlos::daemon {

struct JobSample {
  uint64_t job_id = 0;
  std::string label;  // what the user called it
  uint32_t uid = 0;
  bool exclusive = false;
  int cpus = 0;
  std::string pod_uid, slurm_job_id;  // cluster ids of its origin (daemon/cluster_ids.h)
  mlos_training_phase_t phase = MLOS_TRAINING_PHASE_IDLE;
  std::array<double, MLOS_TRAINING_PHASE_COUNT> phase_seconds{};  // totals so far
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> phase_entries{};
  std::optional<double> cpu_seconds;
  std::optional<double> memory_stall_seconds;  // PSI "some" of its cgroup (v2)
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> memory_limit_bytes;
  std::optional<int> memory_pressure_level;            // jobs with a memory watch
  std::optional<uint64_t> memory_pressure_changes;
  std::optional<PhaseSnapshot::Activity> activity;     // from its phase page
  std::vector<std::string> gpus;                       // UUIDs of the GPUs it holds
  bool gpus_exclusive = false;
  ProcessId owner;                                     // whose processes are the job's (GPU memory)
  std::string gpu_share_file;                          // its GPU limits' books ("" = none)
};

class JobMetrics {
 public:
  // `commit`: the build's (mlos_build_info's commit label).
  explicit JobMetrics(const std::string& commit = "unknown");
  ~JobMetrics();  // defined where JobSeries is complete

  // Brings every series to `samples`: totals become counter increments
  // (a total that went down starts a fresh series), and series of jobs not
  // in `samples` are removed.
  // `cancel` (may be null) is polled between jobs: a stopping daemon does
  // not wait for a long update to finish.
  void update(const std::vector<JobSample>& samples, const std::atomic<bool>* cancel = nullptr);
  // Daemon-wide series: requests by op (mlos_daemon_requests_total{op})
  // and connected clients (mlos_daemon_clients).
  void count_request(const std::string& op);
  void set_clients(int clients);
  std::string text() const;
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  struct JobSeries;
  void drop(uint64_t job);
  // Brings the job's mlos_job_gpu_info series to the GPUs it holds.
  // One job's series brought to `s` (made at its first sample).
  void update_job(const JobSample& s);
  void update_gpus(JobSeries& series, const JobSample& s);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& cpus_;
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Counter>& phase_seconds_;
  prometheus::Family<prometheus::Counter>& transitions_;
  prometheus::Family<prometheus::Counter>& memory_stall_;
  prometheus::Family<prometheus::Counter>& cpu_seconds_;
  prometheus::Family<prometheus::Gauge>& memory_;
  prometheus::Family<prometheus::Gauge>& memory_limit_;
  prometheus::Family<prometheus::Gauge>& pressure_level_;
  prometheus::Family<prometheus::Gauge>& gpu_info_;
  prometheus::Family<prometheus::Counter>& pressure_changes_;
  // Activity: collectives then checkpoints, as counted on the phase page.
  std::array<prometheus::Family<prometheus::Counter>*, 6> activity_{};
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Gauge& clients_;
  prometheus::Gauge& jobs_count_;
  std::map<std::string, prometheus::Counter*> request_series_;
  std::map<uint64_t, std::unique_ptr<JobSeries>> jobs_;
};

}  // namespace mlos::daemon
