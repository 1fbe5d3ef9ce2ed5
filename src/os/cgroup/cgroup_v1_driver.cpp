// SPDX-License-Identifier: Apache-2.0
// cgroup v1: cpuset, cpu and memory are separate hierarchies (cpuacct
// optional), each with its own <base>/<job> directory.
#include "os/cgroup/cgroup_common.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/memory_sources.h"

namespace mlos::os {

namespace {

using cgroup_detail::keyed_value;
using cgroup_detail::parse_pids;
using cgroup_detail::parse_u64;

// v1 cpu.shares equivalent of a v2 cpu.weight (100 <-> 1024).
uint64_t shares_for_weight(uint32_t weight) { return std::max<uint64_t>(2, uint64_t{weight} * 1024 / 100); }

class CgroupV1Driver final : public CgroupDriver {
 public:
  CgroupV1Driver(CgroupV1Mounts m, std::string base) : m_(std::move(m)), base_(std::move(base)) {}

  std::string version() const override { return "v1"; }

  Status create(const std::string& job) override {
    if (Status s = validate_job_name(job); !s) return s;
    for (CgroupFs* fs : hierarchies()) {
      if (Status s = fs->make_dir(base_); !s) return s;
      if (Status s = fs->make_dir(path(job)); !s) return s;
    }
    // New v1 cpusets start with no CPUs and no nodes (unless
    // cgroup.clone_children is set), and no task can join them until both
    // are set: give the base everything its parent has.
    for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
      auto mine = m_.cpuset->read(base_ + "/" + file);
      if (!mine) return mine.error();
      if (mine->find_first_not_of(" \n") != std::string::npos) continue;
      auto parent = m_.cpuset->read(file);
      if (!parent) return parent.error();
      if (Status s = m_.cpuset->write(base_ + "/" + file, *parent); !s) return s;
    }
    return Status::Ok();
  }

  Status apply(const std::string& job, const CgroupLimits& l, std::vector<std::string>* unsupported) override {
    if (Status s = validate_job_name(job); !s) return s;
    if (l.cpus.empty() || l.mems.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "cgroup cpus and mems must not be empty");
    if (l.cpu_weight < 1 || l.cpu_weight > 10000) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu weight " + std::to_string(l.cpu_weight) + " outside 1..10000");
    }
    const std::string dir = path(job) + "/";
    if (Status s = m_.cpuset->write(dir + "cpuset.cpus", l.cpus.to_list()); !s) return s;
    if (Status s = m_.cpuset->write(dir + "cpuset.mems", l.mems.to_list()); !s) return s;
    if (Status s = m_.cpu->write(dir + "cpu.shares", std::to_string(shares_for_weight(l.cpu_weight))); !s) return s;
    // -1 means "no limit" to the v1 memory controller.
    auto bytes = [](const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : std::string("-1"); };
    if (Status s = m_.memory->write(dir + "memory.limit_in_bytes", bytes(l.memory_max)); !s) return s;
    if (Status s = m_.memory->write(dir + "memory.soft_limit_in_bytes", bytes(l.memory_high)); !s) return s;
    if (l.memory_low && unsupported != nullptr) {
      unsupported->push_back("memory_low: cgroup v1 has no memory protection (memory.low is v2 only)");
    }
    if (l.gpu_devices) return apply_gpu_devices(job, *l.gpu_devices, unsupported);
    return Status::Ok();
  }

  Status set_cpu_weight(const std::string& job, uint32_t weight) override {
    if (Status s = validate_job_name(job); !s) return s;
    if (weight < 1 || weight > 10000) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu weight " + std::to_string(weight) + " outside 1..10000");
    }
    return m_.cpu->write(path(job) + "/cpu.shares", std::to_string(shares_for_weight(weight)));
  }

  Status attach(const std::string& job, pid_t pid) override {
    if (Status s = validate_job_name(job); !s) return s;
    // cgroupfs reads "0" as "the writer": never move the caller by accident.
    if (pid <= 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "cannot attach pid " + std::to_string(pid));
    // cpuset first: it refuses tasks until cpus and mems are set, and then
    // nothing else has moved yet.
    for (CgroupFs* fs : hierarchies()) {
      if (Status s = fs->write(path(job) + "/cgroup.procs", std::to_string(pid)); !s) return s;
    }
    return Status::Ok();
  }

  Status detach(const std::string& job, const std::string& origin) override {
    auto pids = processes(job);
    if (!pids) return pids.error();
    // The origin is the cpuset hierarchy's path; each hierarchy that has a
    // cgroup of that path takes the process back there, the others (and
    // any that refuses) at their root.
    const std::optional<std::string> back = cgroup_detail::origin_path(origin, path(job));
    Status first;
    for (pid_t pid : *pids) {
      for (CgroupFs* fs : hierarchies()) {
        if (back && !back->empty() && fs->exists(*back) &&
            fs->write(*back + "/cgroup.procs", std::to_string(pid))) {
          continue;
        }
        // ESRCH: the process exited meanwhile, nothing left to move.
        Status s = fs->write("cgroup.procs", std::to_string(pid));
        if (!s && s.error().sys_errno != ESRCH && first.ok()) first = s;
      }
    }
    return first;
  }

  Result<std::vector<pid_t>> processes(const std::string& job) const override {
    if (Status s = validate_job_name(job); !s) return s.error();
    auto text = m_.cpuset->read(path(job) + "/cgroup.procs");
    if (!text) return text.error();
    return parse_pids(*text);
  }

  Result<CgroupUsage> usage(const std::string& job) const override {
    if (Status s = validate_job_name(job); !s) return s.error();
    CgroupUsage u;
    if (auto m = m_.memory->read(path(job) + "/memory.usage_in_bytes")) u.memory_bytes = parse_u64(*m);
    if (u.memory_bytes) {
      auto st = m_.memory->read(path(job) + "/memory.stat");
      const uint64_t inactive = st ? keyed_value(*st, "total_inactive_file").value_or(0) : 0;
      u.memory_working_set = *u.memory_bytes > inactive ? *u.memory_bytes - inactive : 0;
    }
    if (m_.cpuacct) {
      if (auto c = m_.cpuacct->read(path(job) + "/cpuacct.usage")) u.cpu_usage_ns = parse_u64(*c);
    }
    return u;
  }

  Result<UniqueFd> memory_threshold_event(const std::string& job, uint64_t bytes) override {
    if (Status s = validate_job_name(job); !s) return s.error();
    auto* real = dynamic_cast<LinuxCgroupFs*>(m_.memory.get());
    if (!real) return CgroupDriver::memory_threshold_event(job, bytes);
    return v1_usage_threshold_event(MemoryCgroup{1, real->root() + "/" + path(job)}, bytes);
  }

  Status remove(const std::string& job) override {
    if (Status s = validate_job_name(job); !s) return s;
    Status first;
    for (CgroupFs* fs : hierarchies()) {
      Status s = fs->remove_dir(path(job));
      if (!s && first.ok()) first = s;
    }
    return first;
  }

  Result<std::vector<std::string>> jobs() const override {
    if (!m_.cpuset->exists(base_)) return std::vector<std::string>{};
    return m_.cpuset->list_dirs(base_);
  }

 private:
  std::string path(const std::string& job) const { return base_ + "/" + job; }
  std::vector<CgroupFs*> hierarchies() const {
    std::vector<CgroupFs*> out{m_.cpuset.get(), m_.cpu.get(), m_.memory.get()};
    if (m_.cpuacct) out.push_back(m_.cpuacct.get());
    if (m_.devices) out.push_back(m_.devices.get());
    return out;
  }

  // "c 195:N rwm" into devices.allow for its GPUs (a cgroup inherits its
  // parent's list, and a rule re-applied after a change must open them
  // again), devices.deny for the others.
  Status apply_gpu_devices(const std::string& job, const GpuDeviceRule& rule, std::vector<std::string>* unsupported) {
    if (!m_.devices) {
      if (unsupported != nullptr) {
        unsupported->push_back("gpu devices: the v1 devices controller is not mounted, so other GPUs stay open");
      }
      return Status::Ok();
    }
    auto entry = [](int minor) { return "c " + std::to_string(kNvidiaGpuMajor) + ":" + std::to_string(minor) + " rwm"; };
    for (int minor : rule.allowed) {
      if (Status s = m_.devices->write(path(job) + "/devices.allow", entry(minor)); !s) return s;
    }
    for (int minor : rule.denied) {
      if (Status s = m_.devices->write(path(job) + "/devices.deny", entry(minor)); !s) return s;
    }
    return Status::Ok();
  }

  CgroupV1Mounts m_;
  std::string base_;
};

}  // namespace

std::unique_ptr<CgroupDriver> make_cgroup_v1_driver(CgroupV1Mounts mounts, std::string base) {
  return std::make_unique<CgroupV1Driver>(std::move(mounts), std::move(base));
}

}  // namespace mlos::os
