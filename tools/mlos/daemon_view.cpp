// SPDX-License-Identifier: Apache-2.0
#include "daemon_view.h"

#include <cstdio>

#include "core/control_escape.h"

#include "cli_output.h"
#include "policy_report_view.h"
#include "policy_view.h"
#include "process_tuning.h"

namespace mlos::cli {

using nlohmann::json;

std::optional<double> json_number(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string json_text(const json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>().empty() ? fallback : it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<long long>());
  return dump_json(*it);
}

std::string fit(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 1) + "~";
}

std::string short_gpus(const std::vector<std::string>& uuids) {
  std::string out;
  for (const auto& u : uuids) out += (out.empty() ? "" : ",") + u.substr(u.rfind("GPU-", 0) == 0 ? 4 : 0, 8);
  return out.empty() ? "-" : out;
}

std::string short_gpus(const json& job) {
  std::vector<std::string> uuids;
  if (job.is_object() && job.contains("gpus") && job["gpus"].is_array()) {
    for (const auto& g : job["gpus"]) {
      if (g.is_string()) uuids.push_back(g.get<std::string>());
    }
  }
  return short_gpus(uuids);
}

std::string gpu_use(const json& job) {
  if (!job.is_object() || !job.contains("gpu") || !job["gpu"].is_object()) return "-";
  const json& g = job["gpu"];
  const auto util = json_number(g, "utilization_percent");
  const auto memory = json_number(g, "memory_bytes");
  if (!util && !memory) return "-";
  char pct[16] = "-";
  if (util) snprintf(pct, sizeof pct, "%.0f%%", *util);
  return std::string(pct) + " " + (memory ? human_bytes(static_cast<uint64_t>(*memory)) : std::string("-"));
}

std::string human_duration(double seconds) {
  const long long s = seconds < 0 ? 0 : static_cast<long long>(seconds);
  char buf[32];
  if (s < 60) snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600) snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400) snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  return buf;
}

std::string job_memory(const json& job) {
  auto used = json_number(job, "memory_used_bytes");
  auto limit = json_number(job, "memory_bytes");
  auto show = [](std::optional<double> v) {
    return v && *v > 0 ? human_bytes(static_cast<uint64_t>(*v)) : std::string("-");
  };
  if (!used && !(limit && *limit > 0)) return "-";
  return (used ? human_bytes(static_cast<uint64_t>(*used)) : std::string("-")) + "/" + show(limit);
}

json daemon_status_json(const json& reply, const std::string& socket) {
  json j = json_envelope("status");
  j["source"] = "mlosd";
  j["socket"] = socket;
  j["daemon"] = reply.contains("daemon") ? reply["daemon"] : json::object();
  for (const char* key : {"cpus", "exclusive_cpus", "shared_pool", "cgroups", "confinement", "users"}) {
    if (reply.contains(key)) j[key] = reply[key];
  }
  j["jobs"] = reply.contains("jobs") && reply["jobs"].is_array() ? reply["jobs"] : json::array();
  for (auto& job : j["jobs"]) {
    if (job.is_object()) job["tuning"] = tuning_of_process(static_cast<pid_t>(json_number(job, "pid").value_or(0)));
  }
  return j;
}

std::string daemon_status_text(const json& reply, const std::string& socket) {
  const json& d = reply.contains("daemon") ? reply["daemon"] : json::object();
  std::string out = "mlosd " + json_text(d, "version") + " (pid " + json_text(d, "pid") + ", up " +
                    human_duration(json_number(d, "uptime_seconds").value_or(0)) + ", cgroups " +
                    json_text(reply, "cgroups") + ") on " + socket + "\n";
  out += "CPUs " + json_text(reply, "cpus") + ", shared pool " + json_text(reply, "shared_pool") + ", exclusive " +
         json_text(reply, "exclusive_cpus") + "\n";
  // Whether exclusive CPUs are kept from the node's other processes too.
  if (reply.contains("confinement") && reply["confinement"].is_object()) {
    const json& c = reply["confinement"];
    if (c.value("active", false)) {
      out += "confinement " + json_text(c, "mode") + ": other processes on CPUs " + json_text(c, "pool") + " (" +
             json_text(c, "confined_processes", "0") + " moved, " +
             std::to_string(c.contains("left_alone") && c["left_alone"].is_array() ? c["left_alone"].size() : 0) +
             " left alone)\n";
    } else {
      out += "confinement " + json_text(c, "mode") + ": none (" + json_text(c, "reason") + ")\n";
    }
  }
  char line[512];
  // The GPUs jobs can claim, and who holds them.
  if (reply.contains("gpus") && reply["gpus"].is_array()) {
    const json& gpus = reply["gpus"];
    if (gpus.empty()) out += "GPUs: none (" + json_text(reply, "gpu_note", "-") + ")\n";
    for (const auto& g : gpus) {
      const bool excl = g.is_object() && g.value("exclusive", false);
      const int shared = g.is_object() ? static_cast<int>(json_number(g, "shared_claims").value_or(0)) : 0;
      out += "GPU " + json_text(g, "index") + " " + json_text(g, "uuid") + " (node " + json_text(g, "numa_node") +
             "): " + (excl ? std::string("exclusive") : shared > 0 ? "shared by " + std::to_string(shared) : "free") +
             "\n";
    }
  }
  // Who holds what, against the per-user quotas (root has none).
  const json& users = reply.contains("users") && reply["users"].is_array() ? reply["users"] : json::array();
  for (const auto& u : users) {
    const json& q = u.is_object() && u.contains("quota") ? u["quota"] : json();
    auto of = [&q](const char* key) { return q.is_object() ? "/" + json_text(q, key, "-") : std::string(); };
    snprintf(line, sizeof line, "uid %s: %s jobs%s, %s exclusive CPUs%s, %s connections%s\n",
             json_text(u, "uid").c_str(), json_text(u, "jobs").c_str(), of("jobs").c_str(),
             json_text(u, "exclusive_cpus").c_str(), of("exclusive_cpus").c_str(), json_text(u, "connections").c_str(),
             of("connections").c_str());
    out += line;
  }
  const json& jobs = reply.contains("jobs") && reply["jobs"].is_array() ? reply["jobs"] : json::array();
  if (jobs.empty()) return out + "no jobs\n";
  snprintf(line, sizeof line, "%5s %-16s %8s %6s %-10s %-4s %-12s %6s %-20s %8s %-10s %-14s %-20s  %s\n", "JOB",
           "LABEL", "PID", "UID", "CPUS", "EXCL", "PHASE", "WEIGHT", "MEM", "CPU-s", "GPUS", "GPU-USE", "TUNING",
           "POLICIES");
  out += line;
  for (const auto& job : jobs) {
    auto cpu = json_number(job, "cpu_seconds");
    char cpu_text[32] = "-";
    if (cpu) snprintf(cpu_text, sizeof cpu_text, "%.1f", *cpu);
    // EXCL: "node" (kept from every process), "mlos" (from other jobs only), "no".
    const bool excl = job.is_object() && job.contains("exclusive") && job["exclusive"] == true;
    const std::string scope = excl ? json_text(job, "exclusive_scope", "mlos") : "no";
    const std::string tuning = tuning_of_process(static_cast<pid_t>(json_number(job, "pid").value_or(0)));
    snprintf(line, sizeof line, "%5s %-16s %8s %6s %-10s %-4s %-12s %6s %-20s %8s %-10s %-14s %-20s  %s\n",
             json_text(job, "job").c_str(), fit(escape_controls(json_text(job, "label")), 16).c_str(),
             json_text(job, "pid").c_str(),
             json_text(job, "uid").c_str(), json_text(job, "cpus").c_str(), scope.c_str(),
             json_text(job, "phase").c_str(), json_text(job, "cpu_weight").c_str(), job_memory(job).c_str(), cpu_text,
             fit(short_gpus(job), 10).c_str(), fit(gpu_use(job), 14).c_str(), tuning.empty() ? "-" : fit(tuning, 20).c_str(),
             fit(job_policies(job), 200).c_str());
    out += line;
  }
  // What the jobs' policies published (auto's class and why), as for
  // embedded claims.
  for (const auto& job : jobs) {
    if (!job.is_object() || !job.contains("policy_report") || !job["policy_report"].is_object()) continue;
    out += policy_report_text(static_cast<uint64_t>(json_number(job, "job").value_or(0)), job["policy_report"]);
  }
  return out;
}

}  // namespace mlos::cli
