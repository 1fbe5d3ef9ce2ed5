// SPDX-License-Identifier: Apache-2.0
#include "os/memory_sources.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <sstream>

#include "os/cgroup/cgroup_driver.h"
#include "os/durable_file.h"
#include "os/process_info.h"

namespace mlos::os {

namespace {

// v1 reports "no limit" as a huge page-aligned number near INT64_MAX.
constexpr uint64_t kNoLimitAbove = uint64_t{1} << 62;

std::optional<std::string> read_text(const std::string& path) {
  auto text = read_whole_file(path);
  if (!text || !text->has_value()) return std::nullopt;
  return std::move(**text);
}

std::optional<uint64_t> parse_u64_or_max(std::string_view v) {
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
  if (v == "max") return UINT64_MAX;
  uint64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

std::optional<uint64_t> read_u64(const std::string& path) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  return parse_u64_or_max(*text);
}

// "key N" in memory.stat.
std::optional<uint64_t> stat_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string k; in >> k;) {
    uint64_t v = 0;
    if (!(in >> v)) return std::nullopt;
    if (k == key) return v;
  }
  return std::nullopt;
}

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

Result<UniqueFd> v1_event(const MemoryCgroup& cg, const std::string& file, const std::string& args) {
  if (cg.version != 1) {
    return make_error(MLOS_ERR_UNSUPPORTED, "cgroup.event_control exists only in cgroup v1 (" + cg.dir + " is v2)");
  }
  UniqueFd efd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!efd.valid()) return make_sys_error(errno, "eventfd");
  UniqueFd target(open((cg.dir + "/" + file).c_str(), O_RDONLY | O_CLOEXEC));
  if (!target.valid()) return make_sys_error(errno, "cannot open " + cg.dir + "/" + file);
  UniqueFd control(open((cg.dir + "/cgroup.event_control").c_str(), O_WRONLY | O_CLOEXEC));
  if (!control.valid()) return make_sys_error(errno, "cannot open " + cg.dir + "/cgroup.event_control");
  const std::string line = std::to_string(efd.get()) + " " + std::to_string(target.get()) + " " + args;
  if (write(control.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return make_sys_error(errno, "cgroup.event_control refused \"" + args + "\" for " + file + " in " + cg.dir);
  }
  // The kernel holds its own references; the eventfd is all we keep.
  return efd;
}

}  // namespace

Result<std::optional<MemoryCgroup>> limited_memory_cgroup(pid_t pid, const std::string& proc_root) {
  const std::string self = proc_root + "/" + std::to_string(pid);
  auto mountinfo = read_text(self + "/mountinfo");
  auto cgroups = read_text(self + "/cgroup");
  if (!mountinfo || !cgroups) return make_sys_error(errno, "cannot read " + self + "/{mountinfo,cgroup}");
  const CgroupMounts mounts = parse_cgroup_mounts(*mountinfo);
  MemoryCgroup cg;
  std::optional<std::string> path;
  const char* limit_file = nullptr;
  if (!mounts.memory.empty() && (path = parse_cgroup_path(*cgroups, "memory"))) {
    cg.version = 1;
    limit_file = "memory.limit_in_bytes";
    cg.dir = mounts.memory;
  } else if (!mounts.unified.empty() && (path = parse_cgroup_path(*cgroups, ""))) {
    cg.version = 2;
    limit_file = "memory.max";
    cg.dir = mounts.unified;
  } else {
    return std::optional<MemoryCgroup>();
  }
  for (std::string p = *path;; p = parent_of(p)) {
    const std::string dir = cg.dir + (p == "/" ? "" : p);
    auto limit = read_u64(dir + "/" + limit_file);
    if (limit && *limit < kNoLimitAbove) return std::optional<MemoryCgroup>(MemoryCgroup{cg.version, dir});
    if (p == "/") break;
  }
  return std::optional<MemoryCgroup>();
}

Result<CgroupMemory> read_cgroup_memory(const MemoryCgroup& cg) {
  const bool v1 = cg.version == 1;
  const std::string usage_path = cg.dir + (v1 ? "/memory.usage_in_bytes" : "/memory.current");
  const std::string limit_path = cg.dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max");
  auto usage = read_u64(usage_path);
  auto limit = read_u64(limit_path);
  if (!usage || !limit) return make_sys_error(errno, "cannot read " + usage_path + " / " + limit_path);
  CgroupMemory m;
  m.usage = *usage;
  m.limit = *limit >= kNoLimitAbove ? UINT64_MAX : *limit;
  uint64_t inactive_file = 0;
  if (auto stat = read_text(cg.dir + "/memory.stat")) {
    inactive_file = stat_value(*stat, v1 ? "total_inactive_file" : "inactive_file").value_or(0);
  }
  m.working_set = m.usage > inactive_file ? m.usage - inactive_file : 0;
  return m;
}

std::optional<PsiAverages> parse_pressure_averages(std::string_view text) {
  PsiAverages a;
  bool some = false;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string kind, avg10;
    if (!(words >> kind >> avg10) || avg10.rfind("avg10=", 0) != 0) continue;
    double v = 0;
    const char* b = avg10.data() + 6;
    auto [p, ec] = std::from_chars(b, avg10.data() + avg10.size(), v);
    if (ec != std::errc() || p == b) continue;
    if (kind == "some") {
      a.some_avg10 = v;
      some = true;
    } else if (kind == "full") {
      a.full_avg10 = v;
    }
  }
  if (!some) return std::nullopt;
  return a;
}

std::optional<PsiAverages> read_memory_pressure(const std::optional<MemoryCgroup>& cg, const std::string& proc_root) {
  std::optional<std::string> text;
  if (cg && cg->version == 2) text = read_text(cg->dir + "/memory.pressure");
  if (!text) text = read_text(proc_root + "/pressure/memory");
  if (!text) return std::nullopt;
  return parse_pressure_averages(*text);
}

Result<NodeMemory> read_node_memory(const std::string& proc_root) {
  auto text = read_text(proc_root + "/meminfo");
  if (!text) return make_sys_error(errno, "cannot read " + proc_root + "/meminfo");
  auto avail = parse_meminfo_field(*text, "MemAvailable");
  auto total = parse_meminfo_field(*text, "MemTotal");
  if (!avail || !total) return make_error(MLOS_ERR_SYSTEM, proc_root + "/meminfo lacks MemAvailable or MemTotal");
  return NodeMemory{*avail, *total};
}

void add_node_figures(MemoryFigures* f, const std::optional<MemoryCgroup>& cg, const std::string& proc_root) {
  if (auto node = read_node_memory(proc_root)) f->consider(node->available, node->total, MemorySource::kNode);
  if (auto psi = read_memory_pressure(cg, proc_root)) {
    f->psi_some_avg10 = psi->some_avg10;
    f->psi_full_avg10 = psi->full_avg10;
  }
}

Result<uint64_t> process_resident_bytes(pid_t pid, const std::string& proc_root) {
  const std::string path = proc_root + "/" + std::to_string(pid) + "/status";
  auto text = read_text(path);
  if (!text) return make_sys_error(errno, "cannot read " + path);
  auto anon = parse_meminfo_field(*text, "RssAnon");
  if (!anon) return make_error(MLOS_ERR_SYSTEM, path + " lacks RssAnon");
  return *anon + parse_meminfo_field(*text, "RssShmem").value_or(0);
}

Result<PsiTrigger> open_psi_trigger(const std::string& path, const std::string& kind, uint64_t stall_us,
                                    uint64_t window_us, std::string* note) {
  constexpr uint64_t kUnprivilegedStep = 2000000;  // kernel/sched/psi.c: 2 s
  PsiTrigger t{UniqueFd(), stall_us, window_us};
  for (int attempt = 0; attempt < 2; ++attempt) {
    t.fd.reset(open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    if (!t.fd.valid()) {
      if (errno == ENOENT) return make_sys_error(errno, path + " does not exist (kernel without PSI)", MLOS_ERR_UNSUPPORTED);
      return make_sys_error(errno, "cannot open " + path);
    }
    const std::string spec = kind + " " + std::to_string(t.stall_us) + " " + std::to_string(t.window_us);
    // The trigger string includes its NUL (the kernel's own example does).
    if (write(t.fd.get(), spec.c_str(), spec.size() + 1) >= 0) return t;
    const int err = errno;
    if (err != EINVAL || t.window_us % kUnprivilegedStep == 0 || attempt > 0) {
      const int code = err == EOPNOTSUPP || err == ENOTSUP ? MLOS_ERR_UNSUPPORTED : MLOS_ERR_SYSTEM;
      return make_sys_error(err, "PSI trigger \"" + spec + "\" refused by " + path, code);
    }
    const uint64_t window = (t.window_us + kUnprivilegedStep - 1) / kUnprivilegedStep * kUnprivilegedStep;
    t.stall_us = t.stall_us * window / t.window_us;
    if (note) {
      *note = "PSI trigger window " + std::to_string(t.window_us / 1000) + " ms refused (the kernel treats this "
              "process as unprivileged: no CAP_SYS_RESOURCE); using " + std::to_string(window / 1000) + " ms";
    }
    t.window_us = window;
  }
  return make_error(MLOS_ERR_SYSTEM, "unreachable");
}

Status check_eventfd(int fd) {
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n < 0 || std::string(target, static_cast<size_t>(n)) != "anon_inode:[eventfd]") {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "the descriptor passed is not an eventfd");
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return make_sys_error(errno, "fcntl on an eventfd");
  return Status::Ok();
}

Result<UniqueFd> v1_usage_threshold_event(const MemoryCgroup& cg, uint64_t bytes) {
  return v1_event(cg, "memory.usage_in_bytes", std::to_string(bytes));
}

Result<UniqueFd> v1_pressure_level_event(const MemoryCgroup& cg, const std::string& level) {
  if (level != "low" && level != "medium" && level != "critical") {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "vmpressure level must be low, medium or critical");
  }
  return v1_event(cg, "memory.pressure_level", level);
}

}  // namespace mlos::os
