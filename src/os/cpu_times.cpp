// SPDX-License-Identifier: Apache-2.0
#include "os/cpu_times.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "os/process_info.h"

namespace mlos::os {

namespace {

Result<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_sys_error(errno, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::map<int, double> parse_cpu_busy_seconds(std::string_view text, const CpuSet& cpus, long ticks_per_second) {
  std::map<int, double> busy;
  if (ticks_per_second <= 0) return busy;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == text.npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // "cpuN user nice system idle iowait irq softirq steal ..."; the "cpu "
    // line is the total.
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    int cpu = -1;
    auto [p, ec] = std::from_chars(line.data() + 3, line.data() + line.size(), cpu);
    if (ec != std::errc() || !cpus.test(cpu)) continue;
    std::istringstream fields{std::string(p, line.data() + line.size())};
    unsigned long long v[8] = {0};
    int n = 0;
    while (n < 8 && fields >> v[n]) ++n;
    if (n < 8) continue;
    busy[cpu] = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / static_cast<double>(ticks_per_second);
  }
  return busy;
}

Result<double> cpu_busy_seconds(const CpuSet& cpus) {
  auto text = slurp("/proc/stat");
  if (!text) return text.error();
  double sum = 0;
  for (const auto& [cpu, seconds] : parse_cpu_busy_seconds(*text, cpus, sysconf(_SC_CLK_TCK))) sum += seconds;
  return sum;
}

Result<double> process_cpu_seconds(pid_t pid) {
  auto text = slurp("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return text.error();
  auto stat = parse_proc_stat(*text);
  if (!stat) return stat.error();
  return static_cast<double>(stat->utime + stat->stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace mlos::os
