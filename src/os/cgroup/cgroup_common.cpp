// SPDX-License-Identifier: Apache-2.0
#include "os/cgroup/cgroup_common.h"

#include <charconv>
#include <sstream>

#include "os/cgroup/cgroup_driver.h"

namespace mlos::os {

Status validate_job_name(const std::string& job) {
  bool ok = !job.empty() && job.size() <= 64 && job != "." && job != "..";
  for (char c : job) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                c == '.');
  }
  if (!ok) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "job cgroup name \"" + job + "\" must be 1-64 characters of [A-Za-z0-9_.-], not . or ..");
  }
  return Status::Ok();
}

namespace cgroup_detail {

std::vector<pid_t> parse_pids(const std::string& text) {
  std::vector<pid_t> out;
  std::istringstream in(text);
  for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
  return out;
}

std::optional<uint64_t> parse_u64(const std::string& text) {
  size_t b = text.find_first_not_of(" \t\n");
  size_t e = text.find_last_not_of(" \t\n");
  if (b == std::string::npos) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data() + b, text.data() + e + 1, v);
  if (ec != std::errc() || p != text.data() + e + 1) return std::nullopt;
  return v;
}

std::optional<uint64_t> keyed_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::optional<std::string> origin_path(const std::string& origin, const std::string& job_path) {
  if (origin.empty() || origin.front() != '/') return std::nullopt;
  std::string rel = origin.substr(1);
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  std::istringstream parts(rel);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty() || part == "." || part == "..") return std::nullopt;
  }
  if (rel == job_path || rel.rfind(job_path + "/", 0) == 0) return std::nullopt;
  return rel;
}

}  // namespace cgroup_detail
}  // namespace mlos::os

namespace mlos::os {

Result<UniqueFd> CgroupDriver::memory_threshold_event(const std::string& /*job*/, uint64_t /*bytes*/) {
  return make_error(MLOS_ERR_UNSUPPORTED, version() + " has no memory usage threshold notifications here");
}

Result<UniqueFd> CgroupDriver::memory_pressure_trigger(const std::string& /*job*/, const std::string& /*kind*/,
                                                       uint64_t /*stall_us*/, uint64_t /*window_us*/,
                                                       std::string* /*note*/) {
  return make_error(MLOS_ERR_UNSUPPORTED, version() + " has no per-cgroup PSI triggers here");
}

}  // namespace mlos::os
