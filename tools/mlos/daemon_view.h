/* SPDX-License-Identifier: Apache-2.0 */
// `mlos status` over mlosd: its "status" reply as JSON for --json, and as
// a text table. Pure functions of the reply (no I/O), tolerant of missing
// or null fields (shown as "-"), so an older or newer mlosd still renders.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlos::cli {

// Field readers shared by the daemon views: the value if `j` is an object
// holding `key` with that type, else nullopt / `fallback`.
std::optional<double> json_number(const nlohmann::json& j, const char* key);
std::string json_text(const nlohmann::json& j, const char* key, const std::string& fallback = "-");

// `text` cut to `width` (>= 1) characters, the last one then '~'.
std::string fit(const std::string& text, size_t width);

// GPU UUIDs in a table cell: each as the 8 characters after "GPU-",
// comma-separated; "-" when there are none.
std::string short_gpus(const std::vector<std::string>& uuids);
std::string short_gpus(const nlohmann::json& job);  // its "gpus" array

// A job's GPU use from mlosd's NVML readings (its "gpu" object): the held
// GPUs' utilization and its processes' GPU memory, "88% 1.0 GiB"; "-" for
// a figure not known, "-" alone when there are none.
std::string gpu_use(const nlohmann::json& job);

// "42s", "5m03s", "2h05m", "3d04h".
std::string human_duration(double seconds);

// A job's memory as "USED/LIMIT" ("12.0 MiB/64.0 MiB"); "-" stands for an
// unknown use (no cgroup) or no limit (memory_bytes 0).
std::string job_memory(const nlohmann::json& job);

// {"schema_version":1,"command":"status","source":"mlosd","socket":...,
//  "daemon":{...},"cpus","exclusive_cpus","shared_pool","cgroups",
//  "jobs":[...]}: the daemon's objects passed through unchanged.
nlohmann::json daemon_status_json(const nlohmann::json& reply, const std::string& socket);

// A header line (daemon version, pid, uptime, cgroups, CPUs, shared pool,
// exclusive CPUs), the GPUs and who holds them, then the table JOB LABEL
// PID UID CPUS EXCL PHASE WEIGHT MEM CPU-s GPUS GPU-USE TUNING POLICIES (policy_view.h's job_policies), or "no jobs". Every
// line ends in '\n'. A label's control characters are escaped
// (core/control_escape.h): it is the job's user's text, read on another
// user's terminal.
std::string daemon_status_text(const nlohmann::json& reply, const std::string& socket);

}  // namespace mlos::cli
