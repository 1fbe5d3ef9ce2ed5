/* SPDX-License-Identifier: Apache-2.0 */
// Reads what the kernel reports about this process's threads, from /proc
// and ioprio_get(2): how integration tests check effects from outside the
// library.
#pragma once

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace mlos_test {

// AddressSanitizer replaces mlock/munlock with no-ops that report success,
// so locked memory cannot be observed in VmLck in a sanitizer build.
#if defined(__SANITIZE_ADDRESS__) || defined(MLOS_TEST_UNDER_ASAN)
constexpr bool kMlockIsObservable = false;
#else
constexpr bool kMlockIsObservable = true;
#endif
#define SKIP_IF_MLOCK_UNOBSERVABLE() \
  if (!mlos_test::kMlockIsObservable) GTEST_SKIP() << "AddressSanitizer turns mlock into a no-op"

inline pid_t current_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// CPUs this process may use (taskset, cgroup cpuset), not CPUs online.
inline int allowed_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Value of "Key:\t..." in /proc/<pid>/status-like text, trimmed.
inline std::string status_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

// Whether this process may use CAP_SYS_RESOURCE (PSI windows under 2 s,
// raising hard rlimits): root has it in the VM test bed, not on the
// development machines.
inline bool has_cap_sys_resource() {
  const std::string eff = status_field(read_text("/proc/self/status"), "CapEff");
  return !eff.empty() && ((std::stoull(eff, nullptr, 16) >> 24) & 1);
}

inline std::string task_path(pid_t tid) { return "/proc/self/task/" + std::to_string(tid); }

inline std::string cpus_allowed_list(pid_t tid) {
  return status_field(read_text(task_path(tid) + "/status"), "Cpus_allowed_list");
}

// Field 19 of /proc/self/task/<tid>/stat.
inline int task_nice(pid_t tid) {
  std::string stat = read_text(task_path(tid) + "/stat");
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string tok;
  for (int field = 3; field <= 19 && rest >> tok; ++field) {
  }
  return std::stoi(tok);
}

// VmLck of the process in kB.
inline long vm_locked_kb() {
  std::string v = status_field(read_text("/proc/self/status"), "VmLck");
  return std::stol(v);
}

// Policy word of the thread's first numa_maps line: "default", "prefer:0",
// "bind:0", "interleave:0-1".
inline std::string task_mempolicy(pid_t tid) {
  std::istringstream in(read_text(task_path(tid) + "/numa_maps"));
  std::string addr, policy;
  in >> addr >> policy;
  return policy;
}

struct IoPrio {
  int io_class;
  int level;
};
inline IoPrio task_ioprio(pid_t tid) {
  long raw = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, tid);
  return IoPrio{static_cast<int>(raw >> 13), static_cast<int>(raw & 0x1fff)};
}

}  // namespace mlos_test
