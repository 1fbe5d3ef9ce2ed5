// SPDX-License-Identifier: Apache-2.0
#include "top_view.h"

#include <cstdio>

#include "core/control_escape.h"
#include "daemon_view.h"
#include "policy_view.h"

namespace mlos::cli {

using nlohmann::json;

namespace {

// The status reply's phase keys, in training order, with column titles.
struct PhaseColumn {
  const char* key;
  const char* title;
};
constexpr PhaseColumn kPhases[] = {{"IDLE", "IDLE%"},     {"DATA_LOADING", "DATA%"}, {"FORWARD", "FWD%"},
                                   {"BACKWARD", "BWD%"}, {"OPTIMIZER", "OPT%"},     {"CHECKPOINT", "CKPT%"}};

std::optional<uint64_t> job_id(const json& job) {
  if (!job.is_object() || !job.contains("job") || !job["job"].is_number_unsigned()) return std::nullopt;
  return job["job"].get<uint64_t>();
}

// Each phase's share of the job's phase_seconds as "%5.1f", or "-" when
// the job has spent no recorded time in any phase yet.
std::string phase_shares(const json& job) {
  const json& seconds = job.is_object() && job.contains("phase_seconds") ? job["phase_seconds"] : json::object();
  double total = 0;
  for (const auto& p : kPhases) total += json_number(seconds, p.key).value_or(0);
  std::string out;
  char cell[16];
  for (const auto& p : kPhases) {
    if (total > 0) snprintf(cell, sizeof cell, " %5.1f", 100.0 * json_number(seconds, p.key).value_or(0) / total);
    else snprintf(cell, sizeof cell, " %5s", "-");
    out += cell;
  }
  return out;
}

}  // namespace

std::map<uint64_t, double> CpuRateTracker::update(const json& jobs, double now_s) {
  std::map<uint64_t, double> rates;
  std::map<uint64_t, Sample> current;
  const double elapsed = previous_s_ >= 0 ? now_s - previous_s_ : 0;
  for (const auto& job : jobs.is_array() ? jobs : json::array()) {
    auto id = job_id(job);
    auto cpu = json_number(job, "cpu_seconds");
    if (!id || !cpu) continue;
    const int64_t pid = static_cast<int64_t>(json_number(job, "pid").value_or(-1));
    current[*id] = Sample{pid, *cpu};
    auto prev = previous_.find(*id);
    if (elapsed > 0 && prev != previous_.end() && prev->second.pid == pid && *cpu >= prev->second.cpu_seconds) {
      rates[*id] = 100.0 * (*cpu - prev->second.cpu_seconds) / elapsed;
    }
  }
  previous_ = std::move(current);
  previous_s_ = now_s;
  return rates;
}

std::string render_top(const json& reply, const std::map<uint64_t, double>& cpu_percent, const std::string& clock) {
  const json& d = reply.contains("daemon") ? reply["daemon"] : json::object();
  const json& jobs = reply.contains("jobs") && reply["jobs"].is_array() ? reply["jobs"] : json::array();
  const long long clients = static_cast<long long>(json_number(d, "clients").value_or(0));
  std::string out = "mlos top - " + clock + "  mlosd " + json_text(d, "version") + " (pid " + json_text(d, "pid") +
                    "), up " + human_duration(json_number(d, "uptime_seconds").value_or(0)) + ", " +
                    std::to_string(clients) + (clients == 1 ? " client" : " clients") + ", cgroups " +
                    json_text(reply, "cgroups") + "\n";
  out += "CPUs: " + json_text(reply, "cpus") + "  shared pool: " + json_text(reply, "shared_pool") +
         "  exclusive: " + json_text(reply, "exclusive_cpus") + "  jobs: " + std::to_string(jobs.size()) + "\n\n";
  char line[512];
  snprintf(line, sizeof line, "%5s %-16s %8s %-10s %-12s", "JOB", "LABEL", "PID", "CPUS", "PHASE");
  out += line;
  for (const auto& p : kPhases) {
    snprintf(line, sizeof line, " %5s", p.title);
    out += line;
  }
  snprintf(line, sizeof line, " %-20s %-10s %-14s %6s  %s\n", "MEM", "GPUS", "GPU-USE", "CPU%", "POLICIES");
  out += line;
  for (const auto& job : jobs) {
    snprintf(line, sizeof line, "%5s %-16s %8s %-10s %-12s", json_text(job, "job").c_str(),
             fit(escape_controls(json_text(job, "label")), 16).c_str(), json_text(job, "pid").c_str(),
             fit(json_text(job, "cpus"), 10).c_str(), json_text(job, "phase").c_str());
    out += line;
    out += phase_shares(job);
    auto id = job_id(job);
    auto rate = id ? cpu_percent.find(*id) : cpu_percent.end();
    char cpu[16] = "-";
    if (rate != cpu_percent.end()) snprintf(cpu, sizeof cpu, "%.1f", rate->second);
    snprintf(line, sizeof line, " %-20s %-10s %-14s %6s  %s\n", job_memory(job).c_str(),
             fit(short_gpus(job), 10).c_str(), fit(gpu_use(job), 14).c_str(), cpu, fit(job_policies(job), 60).c_str());
    out += line;
  }
  return out;
}

}  // namespace mlos::cli
