// SPDX-License-Identifier: Apache-2.0
#include "os/process_info.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "os/durable_file.h"

namespace mlos::os {

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<uint64_t> read_u64_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return std::nullopt;
  std::string_view v = *text;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
  if (v == "max") return UINT64_MAX;
  uint64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return out;
}

// Smallest (limit - usage) over `dir` and its ancestors up to `root`.
uint64_t cgroup_headroom(const std::string& root, std::string path, const char* limit_file,
                         const char* usage_file) {
  uint64_t headroom = UINT64_MAX;
  while (true) {
    auto limit = read_u64_file(root + path + "/" + limit_file);
    auto usage = read_u64_file(root + path + "/" + usage_file);
    // v1 reports "no limit" as a huge page-aligned number near INT64_MAX.
    if (limit && usage && *limit < (uint64_t{1} << 62)) {
      headroom = std::min(headroom, *limit > *usage ? *limit - *usage : 0);
    }
    if (path.empty() || path == "/") break;
    path = path.substr(0, path.find_last_of('/'));
  }
  return headroom;
}

}  // namespace

Result<ProcStat> parse_proc_stat(std::string_view text) {
  ProcStat s;
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == text.npos || close == text.npos || close < open) {
    return make_error(MLOS_ERR_SYSTEM, "malformed /proc stat line");
  }
  std::from_chars(text.data(), text.data() + open, s.pid);
  // Fields after ")" start at field 3 (state).
  std::istringstream rest{std::string(text.substr(close + 1))};
  std::vector<std::string> f;
  for (std::string tok; rest >> tok;) f.push_back(tok);
  // f[0] is field 3; start_time is field 22 -> f[19]; nice field 19 -> f[16].
  // The state is one letter (R, S, D, Z, T, t, X, I, ...).
  if (f.size() < 20 || f[0].size() != 1 || !std::isalpha(static_cast<unsigned char>(f[0][0]))) {
    return make_error(MLOS_ERR_SYSTEM, "short or malformed /proc stat line");
  }
  try {
    s.state = f[0][0];
    s.ppid = std::stoi(f[1]);
    s.nice = std::stoi(f[16]);
    s.start_time = std::stoull(f[19]);
    s.utime = std::stoull(f[11]);  // field 14
    s.stime = std::stoull(f[12]);  // field 15
  } catch (const std::exception&) {
    return make_error(MLOS_ERR_SYSTEM, "non-numeric field in /proc stat line");
  }
  return s;
}

std::optional<uint64_t> parse_meminfo_field(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == text.npos ? text.npos : eol - pos);
    pos = eol == text.npos ? text.size() : eol + 1;
    size_t k = line.find(key);
    if (k == line.npos || line.size() <= k + key.size() || line[k + key.size()] != ':') continue;
    if (k > 0 && line[k - 1] != ' ') continue;
    std::string_view rest = line.substr(k + key.size() + 1);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    uint64_t value = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc()) return std::nullopt;
    std::string_view unit(p, rest.data() + rest.size() - p);
    return unit.find("kB") != unit.npos ? value * 1024 : value;
  }
  return std::nullopt;
}

std::optional<std::string> parse_cgroup_path(std::string_view text, std::string_view controller) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find(':');
    size_t b = a == line.npos ? line.npos : line.find(':', a + 1);
    if (b == line.npos) continue;
    std::string_view ctrls = std::string_view(line).substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controller.empty()) {
      if (line.substr(0, a) == "0" && ctrls.empty()) return path;
      continue;
    }
    // v1 lines may list several controllers: "4:cpu,cpuacct:/x".
    size_t start = 0;
    while (start <= ctrls.size()) {
      size_t comma = ctrls.find(',', start);
      if (ctrls.substr(start, comma == ctrls.npos ? ctrls.npos : comma - start) == controller) return path;
      if (comma == ctrls.npos) break;
      start = comma + 1;
    }
  }
  return std::nullopt;
}

Result<ProcStat> read_proc_stat(int pid, const std::string& proc_root) {
  const std::string path = proc_root + "/" + std::to_string(pid) + "/stat";
  // Through open(2), not a stream, so that "no such process" (ENOENT, or
  // ESRCH when it exits between open and read) is told apart from a failure
  // to look (EMFILE and the like).
  auto text = pid > 0 ? read_whole_file(path) : Result<std::optional<std::string>>(std::optional<std::string>());
  if (!text) {
    if (text.error().sys_errno == ESRCH) {
      return make_sys_error(ESRCH, "process " + std::to_string(pid) + " does not exist", MLOS_ERR_NO_SUCH_THREAD);
    }
    return make_sys_error(text.error().sys_errno, "cannot read " + path, MLOS_ERR_SYSTEM);
  }
  if (!text->has_value()) {
    return make_sys_error(ESRCH, "process " + std::to_string(pid) + " does not exist", MLOS_ERR_NO_SUCH_THREAD);
  }
  return parse_proc_stat(**text);
}

Result<ProcessId> process_id(int pid, const std::string& proc_root) {
  auto st = read_proc_stat(pid, proc_root);
  if (!st) return st.error();
  return ProcessId{pid, st->start_time};
}

std::optional<PressureTotals> parse_pressure_totals(std::string_view text) {
  std::optional<PressureTotals> out;
  uint64_t full = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t at = line.find(" total=");
    if (at == std::string_view::npos) continue;
    const std::string_view digits = line.substr(at + 7);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || (end != digits.data() + digits.size() && *end != ' ')) continue;
    if (line.substr(0, 5) == "some ") out = PressureTotals{v, 0};
    if (line.substr(0, 5) == "full ") full = v;
  }
  if (out) out->full_us = full;
  return out;
}

Result<uint32_t> process_uid(int pid, const std::string& proc_root) {
  struct stat st{};
  const std::string path = proc_root + "/" + std::to_string(pid);
  if (pid <= 0 || stat(path.c_str(), &st) != 0) {
    return make_sys_error(pid <= 0 ? ESRCH : errno, "no process " + std::to_string(pid), MLOS_ERR_NO_SUCH_THREAD);
  }
  return static_cast<uint32_t>(st.st_uid);
}

Liveness liveness(const ProcessId& id, const std::string& proc_root) {
  auto st = read_proc_stat(id.pid, proc_root);
  if (!st) return st.error().code == MLOS_ERR_NO_SUCH_THREAD ? Liveness::kGone : Liveness::kUnknown;
  if (st->start_time != id.start_time || st->state == 'Z' || st->state == 'X') return Liveness::kGone;
  return Liveness::kAlive;
}

bool is_alive(const ProcessId& id, const std::string& proc_root) { return liveness(id, proc_root) != Liveness::kGone; }

Result<ProcessUids> parse_status_uids(std::string_view text) {
  size_t at = text.rfind("\nUid:", std::string_view::npos);
  if (at == std::string_view::npos && text.substr(0, 4) != "Uid:") {
    return make_error(MLOS_ERR_SYSTEM, "no Uid: line in a /proc status file");
  }
  at = at == std::string_view::npos ? 4 : at + 5;
  std::istringstream in{std::string(text.substr(at, text.find('\n', at) - at))};
  int64_t real = -1, effective = -1;
  if (!(in >> real >> effective) || real < 0 || effective < 0 || real > UINT32_MAX || effective > UINT32_MAX) {
    return make_error(MLOS_ERR_SYSTEM, "malformed Uid: line in a /proc status file");
  }
  return ProcessUids{static_cast<uint32_t>(real), static_cast<uint32_t>(effective)};
}

Result<ProcessUids> process_uids(int pid, const std::string& proc_root) {
  auto text = pid > 0 ? read_whole_file(proc_root + "/" + std::to_string(pid) + "/status")
                      : Result<std::optional<std::string>>(std::optional<std::string>());
  if (!text) {
    return make_sys_error(text.error().sys_errno, text.error().message,
                          text.error().sys_errno == ESRCH ? MLOS_ERR_NO_SUCH_THREAD : MLOS_ERR_SYSTEM);
  }
  if (!text->has_value()) {
    return make_sys_error(ESRCH, "process " + std::to_string(pid) + " does not exist", MLOS_ERR_NO_SUCH_THREAD);
  }
  return parse_status_uids(**text);
}

std::vector<ProcessId> lineage(int pid, const std::string& proc_root) {
  std::vector<ProcessId> out;
  for (int guard = 0; pid > 0 && guard < 4096; ++guard) {
    auto st = read_proc_stat(pid, proc_root);
    if (!st) break;
    out.push_back(ProcessId{pid, st->start_time});
    pid = st->ppid;
  }
  return out;
}

std::optional<std::string> parse_maps_file_at(std::string_view maps_text, uintptr_t address) {
  // "start-end perms offset dev inode   path": five fields, then spaces,
  // then the path (which may itself hold spaces) to the end of the line.
  while (!maps_text.empty()) {
    const size_t eol = maps_text.find('\n');
    std::string_view line = maps_text.substr(0, eol);
    maps_text = eol == std::string_view::npos ? std::string_view() : maps_text.substr(eol + 1);
    uintptr_t start = 0, end = 0;
    const char* const first = line.data();
    const char* const last = line.data() + line.size();
    auto [after_start, ec1] = std::from_chars(first, last, start, 16);
    if (ec1 != std::errc() || after_start == last || *after_start != '-') continue;
    auto [after_end, ec2] = std::from_chars(after_start + 1, last, end, 16);
    if (ec2 != std::errc() || address < start || address >= end) continue;
    std::string_view rest(after_end, static_cast<size_t>(last - after_end));
    for (int field = 0; field < 4; ++field) {  // perms, offset, dev, inode
      const size_t begin = rest.find_first_not_of(' ');
      if (begin == std::string_view::npos) return std::nullopt;
      rest.remove_prefix(begin);
      const size_t space = rest.find(' ');
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space);
    }
    const size_t begin = rest.find_first_not_of(' ');
    if (begin == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(begin);
    constexpr std::string_view kDeleted = " (deleted)";
    if (rest.empty() || rest[0] != '/') return std::nullopt;
    if (rest.size() >= kDeleted.size() && rest.substr(rest.size() - kDeleted.size()) == kDeleted) return std::nullopt;
    return std::string(rest);
  }
  return std::nullopt;
}

std::string current_boot_id(const std::string& proc_root) {
  auto text = read_file(proc_root + "/sys/kernel/random/boot_id");
  if (!text) return "";
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text;
}

MemoryAvailability read_memory_availability(const Topology& topology, const std::string& proc_root,
                                            const std::string& sys_root) {
  MemoryAvailability m;
  if (auto meminfo = read_file(proc_root + "/meminfo")) {
    if (auto avail = parse_meminfo_field(*meminfo, "MemAvailable")) m.available_bytes = *avail;
  }
  if (auto cg = read_file(proc_root + "/self/cgroup")) {
    if (auto v1 = parse_cgroup_path(*cg, "memory")) {
      m.available_bytes = std::min(
          m.available_bytes,
          cgroup_headroom(sys_root + "/fs/cgroup/memory", *v1, "memory.limit_in_bytes", "memory.usage_in_bytes"));
    } else if (auto v2 = parse_cgroup_path(*cg, "")) {
      m.available_bytes =
          std::min(m.available_bytes, cgroup_headroom(sys_root + "/fs/cgroup", *v2, "memory.max", "memory.current"));
    }
  }
  for (const auto& n : topology.nodes) {
    auto text = read_file(sys_root + "/devices/system/node/node" + std::to_string(n.os_index) + "/meminfo");
    if (!text) continue;
    auto free_b = parse_meminfo_field(*text, "MemFree");
    auto file_b = parse_meminfo_field(*text, "FilePages");
    if (free_b) m.node_free_bytes[n.os_index] = *free_b + file_b.value_or(0);
  }
  return m;
}

}  // namespace mlos::os
