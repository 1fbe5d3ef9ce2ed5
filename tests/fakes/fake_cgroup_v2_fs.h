/* SPDX-License-Identifier: Apache-2.0 */
// An in-memory cgroup2 filesystem that enforces the kernel's rules
// (Documentation/admin-guide/cgroup-v2.rst), so a driver tested against it
// fails here where it would fail on a real machine:
//  - top-down constraint: a cgroup's cgroup.controllers is its parent's
//    cgroup.subtree_control (the root offers the list given to the
//    constructor); "+x" for a known controller not offered -> ENOENT, an
//    unknown name or a malformed token -> EINVAL;
//  - no internal processes (the root is exempt): writing a pid into the
//    cgroup.procs of a cgroup whose subtree_control is non-empty -> EBUSY, and
//    enabling a controller in a cgroup that has processes -> EBUSY (the kernel
//    lets threaded-only controllers through in some thread-root cases; this
//    model does not);
//  - disabling a controller a child still enables -> EBUSY;
//  - controller interface files exist only in non-root cgroups whose
//    cgroup.controllers include the controller (memory.current also at the
//    root); cpu.stat is a core file present everywhere, memory.pressure (PSI)
//    one of every non-root cgroup, as in the kernel.
//    Disabling a controller drops the children's settings (the css dies);
//  - cpuset.cpus.effective is the cgroup's own cpuset.cpus, else its
//    parent's effective CPUs (the root's: set_root_cpus()); emptying the
//    cpuset.cpus of a cgroup with processes in its subtree -> ENOSPC (Linux
//    6.1's validate_change, v2 included);
//  - rmdir of a cgroup with children or processes -> EBUSY; missing files ->
//    ENOENT; writing a read-only file -> EACCES; bad values -> EINVAL.
// A pid is in exactly one cgroup. Writing "0" to cgroup.procs moves the
// writer itself (writer_pid(), which starts in the root), as the kernel does.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "os/cgroup/cgroup_fs.h"

namespace mlos_test {

class FakeCgroupV2Fs final : public mlos::os::CgroupFs {
 public:
  explicit FakeCgroupV2Fs(std::vector<std::string> root_controllers) : order_(std::move(root_controllers)) {
    dirs_[""].procs.insert(writer_pid_);
  }

  bool exists(const std::string& path) const override {
    if (dirs_.count(path) != 0) return true;
    auto [dir, name] = split(path);
    return dirs_.count(dir) != 0 && has_file(dir, name);
  }

  mlos::Status make_dir(const std::string& path) override {
    if (dirs_.count(path) != 0) return mlos::Status::Ok();  // EEXIST is success
    auto [parent, name] = split(path);
    if (name.empty()) return err(EINVAL, "mkdir", path);
    if (dirs_.count(parent) == 0) return err(ENOENT, "mkdir", path);
    if (has_file(parent, name)) return err(EEXIST, "mkdir (a file)", path);
    dirs_[path];
    return mlos::Status::Ok();
  }

  mlos::Status remove_dir(const std::string& path) override {
    auto it = dirs_.find(path);
    if (it == dirs_.end()) return mlos::Status::Ok();  // ENOENT is success
    if (path.empty() || !children(path).empty() || !it->second.procs.empty()) return err(EBUSY, "rmdir", path);
    dirs_.erase(it);
    return mlos::Status::Ok();
  }

  mlos::Result<std::string> read(const std::string& path) const override {
    if (dirs_.count(path) != 0) return err(EISDIR, "read", path);
    auto [dir, name] = split(path);
    if (dirs_.count(dir) == 0 || !has_file(dir, name)) return err(ENOENT, "read", path);
    const Dir& d = dirs_.at(dir);
    if (name == "cgroup.controllers") return join(controllers(dir)) + "\n";
    if (name == "cgroup.subtree_control") return join(canonical(d.subtree)) + "\n";
    if (name == "cgroup.procs") {
      std::string out;
      for (pid_t p : d.procs) out += std::to_string(p) + "\n";
      return out;
    }
    if (name == "memory.current") return std::to_string(d.memory_current) + "\n";
    if (name == "cpuset.cpus.effective") return effective_cpus(dir) + "\n";
    if (name == "cpu.stat") return "usage_usec " + std::to_string(d.cpu_usage_usec) + "\nuser_usec 0\nsystem_usec 0\n";
    if (name == "memory.pressure") {
      return "some avg10=" + std::to_string(d.some_avg10) + " avg60=0.00 avg300=0.00 total=" +
             std::to_string(d.memory_stall_usec) + "\nfull avg10=" + std::to_string(d.full_avg10) +
             " avg60=0.00 avg300=0.00 total=0\n";
    }
    auto v = d.values.find(name);
    return (v != d.values.end() ? v->second : spec(name)->initial) + "\n";
  }

  mlos::Status write(const std::string& path, const std::string& value) override {
    log_.emplace_back(path, value);
    if (dirs_.count(path) != 0) return err(EISDIR, "write", path);
    auto [dir, name] = split(path);
    if (dirs_.count(dir) == 0 || !has_file(dir, name)) return err(ENOENT, "write", path);
    std::string v = value;
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    if (name == "cgroup.subtree_control") return write_subtree(dir, v);
    if (name == "cgroup.procs") return write_procs(dir, v);
    const Spec* s = spec(name);
    if (s == nullptr || !s->writable) return err(EACCES, "write (read-only)", path);
    bool ok = false;
    if (name == "cpu.weight") {
      ok = digits(v) && v.size() <= 5 && std::stoul(v) >= 1 && std::stoul(v) <= 10000;
    } else if (name == "memory.max" || name == "memory.high" || name == "memory.low") {
      ok = v == "max" || (digits(v) && v.size() <= 19);
    } else {
      ok = cpu_list(v);
    }
    if (!ok) return err(EINVAL, "write \"" + v + "\"", path);
    if (name == "cpuset.cpus" && v.empty() && !dirs_[dir].values[name].empty() && populated(dir)) {
      return err(ENOSPC, "emptying the CPUs of a populated cgroup", path);
    }
    dirs_[dir].values[name] = v;
    return mlos::Status::Ok();
  }

  mlos::Result<std::vector<std::string>> list_dirs(const std::string& path) const override {
    if (dirs_.count(path) == 0) return err(exists(path) ? ENOTDIR : ENOENT, "opendir", path);
    return children(path);
  }

  // ---- test helpers (they bypass the kernel's rules) ----
  // The root cgroup's CPUs (its cpuset.cpus.effective; "" by default).
  void set_root_cpus(const std::string& cpus) { root_cpus_ = cpus; }
  // Makes `pids` exactly the processes of `path`, moving them from wherever
  // they were; processes that were there and are not listed exit.
  void set_processes(const std::string& path, const std::vector<pid_t>& pids) {
    dirs_.at(path).procs.clear();
    for (pid_t p : pids) move_pid(p, path);
  }
  // The cgroup holding `pid` ("" = root), nullopt when no cgroup does.
  std::optional<std::string> pid_location(pid_t pid) const {
    for (const auto& [path, d] : dirs_) {
      if (d.procs.count(pid) != 0) return path;
    }
    return std::nullopt;
  }
  pid_t writer_pid() const { return writer_pid_; }
  void set_memory_current(const std::string& path, uint64_t bytes) { dirs_.at(path).memory_current = bytes; }
  void set_cpu_usage_usec(const std::string& path, uint64_t usec) { dirs_.at(path).cpu_usage_usec = usec; }
  void set_memory_stall_usec(const std::string& path, uint64_t usec) { dirs_.at(path).memory_stall_usec = usec; }
  void set_memory_pressure_avg10(const std::string& path, double some, double full) {
    dirs_.at(path).some_avg10 = some;
    dirs_.at(path).full_avg10 = full;
  }
  // What reading `path` gives, without the trailing newline; nullopt if absent.
  std::optional<std::string> file(const std::string& path) const {
    auto r = read(path);
    if (!r) return std::nullopt;
    std::string v = *r;
    if (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
  }
  // Every write() call, in order, whether it succeeded or not.
  const std::vector<std::pair<std::string, std::string>>& writes() const { return log_; }

 private:
  struct Dir {
    std::set<std::string> subtree;
    std::set<pid_t> procs;
    std::map<std::string, std::string> values;
    uint64_t memory_current = 0, cpu_usage_usec = 0, memory_stall_usec = 0;
    double some_avg10 = 0, full_avg10 = 0;
  };
  struct Spec {
    const char* name;
    const char* controller;  // "" = core file
    bool writable, on_root;
    const char* initial;
  };
  static const Spec* spec(const std::string& name) {
    static const Spec kSpecs[] = {
        {"cpuset.cpus", "cpuset", true, false, ""}, {"cpuset.mems", "cpuset", true, false, ""},
        {"cpu.weight", "cpu", true, false, "100"},  {"memory.max", "memory", true, false, "max"},
        {"memory.high", "memory", true, false, "max"}, {"memory.low", "memory", true, false, "0"},
        {"memory.current", "memory", false, true, ""}, {"cpu.stat", "", false, true, ""},
        {"memory.pressure", "", false, false, ""},  // PSI: a core file of non-root cgroups
        {"cpuset.cpus.effective", "cpuset", false, true, ""},
    };
    for (const Spec& s : kSpecs) {
      if (name == s.name) return &s;
    }
    return nullptr;
  }
  static mlos::Error err(int e, const std::string& what, const std::string& path) {
    return mlos::make_sys_error(e, "fake cgroupfs: " + what + " /" + path);
  }
  static std::pair<std::string, std::string> split(const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return {"", path};
    return {path.substr(0, slash), path.substr(slash + 1)};
  }
  static bool digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  }
  // The kernel list format: "" or comma-separated N / N-M with N <= M.
  static bool cpu_list(const std::string& s) {
    if (s.empty()) return true;
    std::istringstream in(s);
    for (std::string item; std::getline(in, item, ',');) {
      size_t dash = item.find('-');
      std::string a = item.substr(0, dash), b = dash == std::string::npos ? a : item.substr(dash + 1);
      if (!digits(a) || !digits(b) || a.size() > 6 || b.size() > 6 || std::stoul(a) > std::stoul(b)) return false;
    }
    return s.back() != ',';
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
    return out;
  }
  std::vector<std::string> canonical(const std::set<std::string>& s) const {
    std::vector<std::string> out;
    for (const auto& c : order_) {
      if (s.count(c) != 0) out.push_back(c);
    }
    return out;
  }
  std::vector<std::string> controllers(const std::string& dir) const {
    return dir.empty() ? order_ : canonical(dirs_.at(split(dir).first).subtree);
  }
  std::string effective_cpus(const std::string& dir) const {
    if (dir.empty()) return root_cpus_;
    auto v = dirs_.at(dir).values.find("cpuset.cpus");
    if (v != dirs_.at(dir).values.end() && !v->second.empty()) return v->second;
    return effective_cpus(split(dir).first);
  }
  bool populated(const std::string& dir) const {
    for (const auto& [p, d] : dirs_) {
      if ((p == dir || p.rfind(dir + "/", 0) == 0) && !d.procs.empty()) return true;
    }
    return false;
  }
  bool has_file(const std::string& dir, const std::string& name) const {
    if (name == "cgroup.controllers" || name == "cgroup.subtree_control" || name == "cgroup.procs") return true;
    const Spec* s = spec(name);
    if (s == nullptr || (dir.empty() && !s->on_root)) return false;
    const auto on = controllers(dir);
    return *s->controller == '\0' || std::find(on.begin(), on.end(), s->controller) != on.end();
  }
  std::vector<std::string> children(const std::string& path) const {
    std::vector<std::string> out;  // std::map order: sorted
    const std::string prefix = path.empty() ? "" : path + "/";
    for (const auto& [p, d] : dirs_) {
      if (!p.empty() && p != path && p.rfind(prefix, 0) == 0 && p.find('/', prefix.size()) == std::string::npos) {
        out.push_back(p.substr(prefix.size()));
      }
    }
    return out;
  }
  void move_pid(pid_t pid, const std::string& to) {
    for (auto& [p, d] : dirs_) d.procs.erase(pid);
    dirs_[to].procs.insert(pid);
  }
  mlos::Status write_subtree(const std::string& dir, const std::string& v) {
    static const std::set<std::string> kKnown = {"cpuset", "cpu",     "io",   "memory", "hugetlb",
                                                 "pids",   "rdma",    "misc", "perf_event"};
    std::set<std::string> enable, disable;
    std::istringstream in(v);
    for (std::string tok; in >> tok;) {
      std::string c = tok.substr(1);
      if ((tok[0] != '+' && tok[0] != '-') || kKnown.count(c) == 0) return err(EINVAL, "write \"" + v + "\"", dir);
      (tok[0] == '+' ? enable : disable).insert(c);
      (tok[0] == '+' ? disable : enable).erase(c);
    }
    Dir& d = dirs_[dir];
    const auto offered = controllers(dir);
    for (const auto& c : enable) {
      if (std::find(offered.begin(), offered.end(), c) == offered.end()) return err(ENOENT, "enable " + c, dir);
    }
    for (const auto& c : disable) {
      for (const auto& child : children(dir)) {
        const auto& sub = dirs_[(dir.empty() ? "" : dir + "/") + child].subtree;
        if (sub.count(c) != 0) return err(EBUSY, "disable " + c, dir);
      }
    }
    bool adds = std::any_of(enable.begin(), enable.end(), [&](const std::string& c) { return d.subtree.count(c) == 0; });
    if (adds && !dir.empty() && !d.procs.empty()) return err(EBUSY, "enable with processes in", dir);
    for (const auto& c : enable) d.subtree.insert(c);
    for (const auto& c : disable) {
      if (d.subtree.erase(c) == 0) continue;
      for (const auto& child : children(dir)) {
        auto& vals = dirs_[(dir.empty() ? "" : dir + "/") + child].values;
        for (auto it = vals.begin(); it != vals.end();) it = it->first.rfind(c + ".", 0) == 0 ? vals.erase(it) : ++it;
      }
    }
    return mlos::Status::Ok();
  }
  mlos::Status write_procs(const std::string& dir, const std::string& v) {
    if (!digits(v) || v.size() > 9) return err(EINVAL, "write pid \"" + v + "\" to", dir);
    if (!dir.empty() && !dirs_[dir].subtree.empty()) return err(EBUSY, "attach (subtree_control set)", dir);
    pid_t pid = static_cast<pid_t>(std::stol(v));
    move_pid(pid == 0 ? writer_pid_ : pid, dir);
    return mlos::Status::Ok();
  }

  std::vector<std::string> order_;
  std::string root_cpus_;
  std::map<std::string, Dir> dirs_;
  std::vector<std::pair<std::string, std::string>> log_;
  pid_t writer_pid_ = 1000;
};

}  // namespace mlos_test
