// SPDX-License-Identifier: Apache-2.0
// Step 1 of the sandbox (enter_sandbox): checks, then descriptors, limits,
// identity, no-new-privileges, dumpable. Step 2 is in sandbox_syscalls.cpp.
#include "os/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>

#include "os/close_descriptors.h"

namespace mlos::os {
namespace {

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct LimitChange {
  int resource;
  const char* name;
  rlimit value;
};

Result<int> thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return make_error(MLOS_ERR_UNSUPPORTED, "no Threads: line in /proc/self/status (is /proc mounted?)");
}

// Any permitted or effective capability: one of them (CAP_SETUID,
// CAP_SYS_RESOURCE) could undo the confinement.
Result<bool> holds_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return make_sys_error(errno, "capget");
  return (data[0].permitted | data[1].permitted | data[0].effective | data[1].effective) != 0;
}

// The identity to become when root: `run_as`, or nobody. Checked against the
// password and group databases so that a typo is an error, not a uid that
// some account may receive later.
Result<Identity> target_identity(const std::optional<std::pair<uid_t, gid_t>>& run_as) {
  if (!run_as) {
    const passwd* pw = getpwnam("nobody");
    if (pw == nullptr)
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "no user \"nobody\" in the password database to run as");
    if (pw->pw_uid == 0 || pw->pw_gid == 0)
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "user \"nobody\" has uid or gid 0");
    return Identity{pw->pw_uid, pw->pw_gid};
  }
  auto [uid, gid] = *run_as;
  if (uid == 0 || gid == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "run_as uid/gid 0 would keep root");
  if (getpwuid(uid) == nullptr) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "run_as uid " + std::to_string(uid) + ": no such user");
  }
  if (getgrgid(gid) == nullptr) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "run_as gid " + std::to_string(gid) + ": no such group");
  }
  return Identity{uid, gid};
}

// Soft and hard limit `value` (hard `hard` where given), refused when above
// the current hard limit: enter_sandbox only lowers.
Status plan_limit(std::vector<LimitChange>& plan, int resource, const char* name, rlim_t value, rlim_t hard) {
  rlimit now{};
  if (getrlimit(resource, &now) != 0) return make_sys_error(errno, std::string("getrlimit ") + name);
  if (value > now.rlim_max) {
    return make_error(MLOS_ERR_PERMISSION, std::string(name) + ": asked for " + std::to_string(value) +
                                               ", the hard limit is " + std::to_string(now.rlim_max) +
                                               " (the sandbox only lowers limits)");
  }
  plan.push_back({resource, name, rlimit{value, std::min(hard, now.rlim_max)}});
  return Status::Ok();
}

Result<std::vector<LimitChange>> plan_limits(const SandboxLimits& limits) {
  std::vector<LimitChange> plan;
  if (limits.max_open_files < 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "max_open_files < 0");
  Status s;
  if (limits.address_space_bytes > 0) {
    s = plan_limit(plan, RLIMIT_AS, "RLIMIT_AS", limits.address_space_bytes, limits.address_space_bytes);
    if (!s) return s.error();
  }
  if (limits.cpu_seconds > 0) {
    // One second between SIGXCPU and SIGKILL: time for a handler to report.
    s = plan_limit(plan, RLIMIT_CPU, "RLIMIT_CPU", limits.cpu_seconds, limits.cpu_seconds + 1);
    if (!s) return s.error();
  }
  if (limits.min_nice < 0 || limits.min_nice > 19) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "min_nice " + std::to_string(limits.min_nice) + " is not in 0..19");
  }
  if (limits.min_nice > 0) {
    // RLIMIT_NICE 0: nice may only go up (20 - 0 is the highest priority
    // an unprivileged task may take back, i.e. none above nice 20).
    s = plan_limit(plan, RLIMIT_NICE, "RLIMIT_NICE", 0, 0);
    if (!s) return s.error();
  }
  if (limits.max_open_files > 0) {
    auto n = static_cast<rlim_t>(limits.max_open_files);
    s = plan_limit(plan, RLIMIT_NOFILE, "RLIMIT_NOFILE", n, n);
    if (!s) return s.error();
  }
  s = plan_limit(plan, RLIMIT_CORE, "RLIMIT_CORE", 0, 0);
  if (!s) return s.error();
  return plan;
}

Status become(const Identity& who) {
  if (setgroups(0, nullptr) != 0) return make_sys_error(errno, "setgroups(0)");
  if (setresgid(who.gid, who.gid, who.gid) != 0) return make_sys_error(errno, "setresgid " + std::to_string(who.gid));
  if (setresuid(who.uid, who.uid, who.uid) != 0) return make_sys_error(errno, "setresuid " + std::to_string(who.uid));
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (getresuid(&r, &e, &s) != 0 || getresgid(&rg, &eg, &sg) != 0) return make_sys_error(errno, "getresuid/getresgid");
  if (r != who.uid || e != who.uid || s != who.uid || rg != who.gid || eg != who.gid || sg != who.gid ||
      getgroups(0, nullptr) != 0) {
    return make_error(MLOS_ERR_PERMISSION, "identity after setresuid/setresgid is not the requested one");
  }
  // The proof that root is gone: the kernel refuses it back.
  if (setresuid(0, 0, 0) == 0) return make_error(MLOS_ERR_PERMISSION, "setresuid(0) succeeded after dropping root");
  if (setresgid(0, 0, 0) == 0) return make_error(MLOS_ERR_PERMISSION, "setresgid(0) succeeded after dropping root");
  return Status::Ok();
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

struct Plan {
  std::vector<LimitChange> limits;
  std::optional<Identity> target;  // set when root: whom to become
};

// Every check, before anything changes.
Result<Plan> make_plan(const SandboxLimits& limits, const std::vector<int>& keep,
                       const std::optional<std::pair<uid_t, gid_t>>& run_as) {
  auto threads = thread_count();
  if (!threads) return threads.error();
  if (*threads != 1) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "enter_sandbox needs a single-threaded process (" + std::to_string(*threads) + " threads)");
  }
  for (int fd : keep) {
    if (fd < 0 || fcntl(fd, F_GETFD) == -1) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "descriptor " + std::to_string(fd) + " to keep is not open");
    }
  }
  Plan plan;
  auto changes = plan_limits(limits);
  if (!changes) return changes.error();
  plan.limits = std::move(*changes);
  uid_t ruid, euid, suid;
  if (getresuid(&ruid, &euid, &suid) != 0) return make_sys_error(errno, "getresuid");
  if (euid == 0) {
    auto t = target_identity(run_as);
    if (!t) return t.error();
    plan.target = *t;
    return plan;
  }
  if (ruid == 0 || suid == 0) {
    return make_error(MLOS_ERR_PERMISSION,
                      "not running as root but the real or saved uid is 0: "
                      "root could be regained");
  }
  if (run_as && (run_as->first != euid || run_as->second != getegid())) {
    return make_error(MLOS_ERR_PERMISSION, "run_as " + std::to_string(run_as->first) + ":" +
                                               std::to_string(run_as->second) + " needs root; running as uid " +
                                               std::to_string(euid));
  }
  auto caps = holds_capabilities();
  if (!caps) return caps.error();
  if (*caps) return make_error(MLOS_ERR_PERMISSION, "not root but holds capabilities (file or ambient)");
  return plan;
}

}  // namespace

nlohmann::json SandboxReport::to_json() const {
  return nlohmann::json{{"uid", uid},
                        {"gid", gid},
                        {"privileges_dropped", privileges_dropped},
                        {"limits",
                         {{"address_space_bytes", limits.address_space_bytes},
                          {"cpu_seconds", limits.cpu_seconds},
                          {"max_open_files", limits.max_open_files},
                          {"min_nice", limits.min_nice}}},
                        {"kept_descriptors", kept_descriptors},
                        {"allowed_syscalls", allowed_syscalls},
                        {"notes", notes}};
}

Result<SandboxReport> enter_sandbox(const SandboxLimits& limits, const std::vector<int>& keep,
                                    std::optional<std::pair<uid_t, gid_t>> run_as) {
  auto plan = make_plan(limits, keep, run_as);
  if (!plan) {
    Error e = plan.error();
    e.message += " (nothing changed)";
    return e;
  }
  const std::optional<Identity>& target = plan->target;

  // Changes. A failure from here on leaves the process partly confined; the
  // message says how far it got.
  std::vector<std::string> done;
  auto partly = [&done](Error e) {
    e.message +=
        done.empty() ? " (nothing changed)" : " (partly confined: " + join(done) + "; do not run plug-in code, exit)";
    return e;
  };
  if (Status s = close_descriptors_except(keep); !s) {
    done.push_back("some descriptors closed");
    return partly(s.error());
  }
  done.push_back("descriptors closed");
  for (const LimitChange& c : plan->limits) {
    if (setrlimit(c.resource, &c.value) != 0) {
      return partly(make_sys_error(errno, std::string("setrlimit ") + c.name + " " + std::to_string(c.value.rlim_cur)));
    }
    done.push_back(c.name);
  }
  if (limits.min_nice > 0) {
    // Per thread on Linux: the process is single-threaded here, and the
    // threads it starts later inherit it.
    errno = 0;
    const int nice_now = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) return partly(make_sys_error(errno, "getpriority"));
    if (nice_now < limits.min_nice && setpriority(PRIO_PROCESS, 0, limits.min_nice) != 0) {
      return partly(make_sys_error(errno, "setpriority " + std::to_string(limits.min_nice)));
    }
    done.push_back("nice");
  }
  SandboxReport report;
  if (target) {
    if (Status s = become(*target); !s) return partly(s.error());
    done.push_back("uid " + std::to_string(target->uid));
    report.privileges_dropped = true;
    auto caps = holds_capabilities();
    if (!caps) return partly(caps.error());
    if (*caps) return partly(make_error(MLOS_ERR_PERMISSION, "capabilities kept after dropping root (securebits?)"));
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return partly(make_sys_error(errno, "PR_SET_NO_NEW_PRIVS"));
  done.push_back("no new privileges");
  // After the uid change, which resets dumpable to fs.suid_dumpable.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return partly(make_sys_error(errno, "PR_SET_DUMPABLE 0"));

  report.uid = getuid();
  report.gid = getgid();
  report.limits = limits;
  report.kept_descriptors = keep;
  report.allowed_syscalls = sandbox_allowed_syscalls();
  if (target) {
    report.notes.push_back("was root: now uid " + std::to_string(report.uid) + " gid " + std::to_string(report.gid) +
                           " with no supplementary groups; setresuid(0) and "
                           "setresgid(0) were refused");
  } else {
    report.notes.push_back("not root: kept uid " + std::to_string(report.uid) + " (nothing to drop)");
  }
  report.notes.push_back("no capabilities, no new privileges, not dumpable, RLIMIT_CORE 0");
  report.notes.push_back(
      "RLIMIT_NPROC left as is: it counts every process of "
      "the uid; the syscall filter forbids fork");
  if (std::find(keep.begin(), keep.end(), 2) == keep.end()) {
    report.notes.push_back("stderr closed: writes to descriptor 2 fail");
  }
  return report;
}

}  // namespace mlos::os
