// SPDX-License-Identifier: Apache-2.0
// cgroup v2 (unified hierarchy). Follows the kernel's delegation rules:
// controllers are enabled top-down through cgroup.subtree_control, and no
// process ever lives in the base cgroup, whose subtree_control is non-empty
// ("no internal processes").
#include <algorithm>
#include <sstream>

#include "os/cgroup/cgroup_common.h"
#include "os/cgroup/cgroup_driver.h"
#include "os/memory_sources.h"
#include "os/process_info.h"

namespace mlos::os {

namespace {

using cgroup_detail::keyed_value;
using cgroup_detail::parse_pids;
using cgroup_detail::parse_u64;

const char* const kControllers[] = {"cpuset", "cpu", "memory"};

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class CgroupV2Driver final : public CgroupDriver {
 public:
  CgroupV2Driver(std::shared_ptr<CgroupFs> fs, std::string base) : fs_(std::move(fs)), base_(std::move(base)) {}

  std::string version() const override { return "v2"; }

  Status create(const std::string& job) override {
    if (Status s = validate_job_name(job); !s) return s;
    if (Status s = enable_controllers(""); !s) return s;
    if (Status s = fs_->make_dir(base_); !s) return s;
    if (Status s = enable_controllers(base_); !s) return s;
    return fs_->make_dir(path(job));
  }

  Status apply(const std::string& job, const CgroupLimits& l, std::vector<std::string>* unsupported) override {
    if (Status s = validate_job_name(job); !s) return s;
    if (l.cpus.empty() || l.mems.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "cgroup cpus and mems must not be empty");
    if (l.cpu_weight < 1 || l.cpu_weight > 10000) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu weight " + std::to_string(l.cpu_weight) + " outside 1..10000");
    }
    auto bytes = [](const std::optional<uint64_t>& v, const char* none) { return v ? std::to_string(*v) : none; };
    const std::pair<const char*, std::string> writes[] = {
        {"cpuset.cpus", l.cpus.to_list()},          {"cpuset.mems", l.mems.to_list()},
        {"cpu.weight", std::to_string(l.cpu_weight)}, {"memory.max", bytes(l.memory_max, "max")},
        {"memory.high", bytes(l.memory_high, "max")}, {"memory.low", bytes(l.memory_low, "0")},
    };
    for (const auto& [file, value] : writes) {
      if (Status s = fs_->write(path(job) + "/" + file, value); !s) return s;
    }
    // v2 has no devices files: device access is a BPF_CGROUP_DEVICE
    // program attached to the cgroup, which mlosd does not load yet.
    if (l.gpu_devices && unsupported != nullptr) {
      unsupported->push_back("gpu devices: cgroup v2 controls devices with a BPF program, which mlosd does not "
                             "attach yet, so other GPUs stay open");
    }
    return Status::Ok();
  }

  Status set_cpu_weight(const std::string& job, uint32_t weight) override {
    if (Status s = validate_job_name(job); !s) return s;
    if (weight < 1 || weight > 10000) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu weight " + std::to_string(weight) + " outside 1..10000");
    }
    return fs_->write(path(job) + "/cpu.weight", std::to_string(weight));
  }

  Status attach(const std::string& job, pid_t pid) override {
    if (Status s = validate_job_name(job); !s) return s;
    // cgroup.procs reads "0" as the writer itself: never move mlosd by mistake.
    if (pid <= 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "cannot attach pid " + std::to_string(pid));
    return fs_->write(path(job) + "/cgroup.procs", std::to_string(pid));
  }

  Status detach(const std::string& job, const std::string& origin) override {
    auto pids = processes(job);
    if (!pids) return pids.error();
    if (pids->empty()) return Status::Ok();
    // The origin while it takes processes (it may be gone, or have become
    // an inner cgroup with controllers enabled: EBUSY), then the leaf.
    std::optional<std::string> back = cgroup_detail::origin_path(origin, path(job));
    if (back && !back->empty() && !fs_->exists(*back)) back.reset();
    const std::string released = base_ + "/released";
    Status first;
    for (pid_t pid : *pids) {
      if (back) {
        Status s = fs_->write(*back + (back->empty() ? "" : "/") + "cgroup.procs", std::to_string(pid));
        if (s || s.error().sys_errno == ESRCH) continue;
        back.reset();
      }
      if (Status s = fs_->make_dir(released); !s) return s;
      Status s = fs_->write(released + "/cgroup.procs", std::to_string(pid));
      if (!s && s.error().sys_errno != ESRCH && first.ok()) first = s;
    }
    return first;
  }

  Result<std::vector<pid_t>> processes(const std::string& job) const override {
    if (Status s = validate_job_name(job); !s) return s.error();
    auto text = fs_->read(path(job) + "/cgroup.procs");
    if (!text) return text.error();
    return parse_pids(*text);
  }

  Result<CgroupUsage> usage(const std::string& job) const override {
    if (Status s = validate_job_name(job); !s) return s.error();
    CgroupUsage u;
    if (auto m = fs_->read(path(job) + "/memory.current")) u.memory_bytes = parse_u64(*m);
    if (u.memory_bytes) {
      auto st = fs_->read(path(job) + "/memory.stat");
      const uint64_t inactive = st ? keyed_value(*st, "inactive_file").value_or(0) : 0;
      u.memory_working_set = *u.memory_bytes > inactive ? *u.memory_bytes - inactive : 0;
    }
    if (auto c = fs_->read(path(job) + "/cpu.stat")) {
      if (auto us = keyed_value(*c, "usage_usec")) u.cpu_usage_ns = *us * 1000;
    }
    if (auto p = fs_->read(path(job) + "/memory.pressure")) {
      if (auto t = parse_pressure_totals(*p)) u.memory_stall_us = t->some_us;
      if (auto a = parse_pressure_averages(*p)) {
        u.memory_psi_some_avg10 = a->some_avg10;
        u.memory_psi_full_avg10 = a->full_avg10;
      }
    }
    return u;
  }

  Result<UniqueFd> memory_pressure_trigger(const std::string& job, const std::string& kind, uint64_t stall_us,
                                           uint64_t window_us, std::string* note) override {
    if (Status s = validate_job_name(job); !s) return s.error();
    auto* real = dynamic_cast<LinuxCgroupFs*>(fs_.get());
    if (!real) return CgroupDriver::memory_pressure_trigger(job, kind, stall_us, window_us, note);
    auto t = open_psi_trigger(real->root() + "/" + path(job) + "/memory.pressure", kind, stall_us, window_us, note);
    if (!t) return t.error();
    return std::move(t->fd);
  }

  Status remove(const std::string& job) override {
    if (Status s = validate_job_name(job); !s) return s;
    return fs_->remove_dir(path(job));
  }

  Result<std::vector<std::string>> jobs() const override {
    if (!fs_->exists(base_)) return std::vector<std::string>{};
    return fs_->list_dirs(base_);
  }

 private:
  std::string path(const std::string& job) const { return base_ + "/" + job; }

  // Enables cpuset, cpu and memory for the children of `dir`.
  Status enable_controllers(const std::string& dir) {
    const std::string prefix = dir.empty() ? "" : dir + "/";
    auto available = fs_->read(prefix + "cgroup.controllers");
    if (!available) return available.error();
    auto enabled = fs_->read(prefix + "cgroup.subtree_control");
    if (!enabled) return enabled.error();
    const auto have = words(*available), on = words(*enabled);
    std::string add;
    for (const char* c : kControllers) {
      if (std::find(have.begin(), have.end(), c) == have.end()) {
        return make_error(MLOS_ERR_UNSUPPORTED, std::string("cgroup v2 controller ") + c + " is not available in " +
                                                    (dir.empty() ? "the root cgroup" : dir) +
                                                    " (enable it in the parent's cgroup.subtree_control)");
      }
      if (std::find(on.begin(), on.end(), c) == on.end()) add += std::string(add.empty() ? "+" : " +") + c;
    }
    if (add.empty()) return Status::Ok();
    Status s = fs_->write(prefix + "cgroup.subtree_control", add);
    if (!s && s.error().sys_errno == EBUSY) {
      return make_error(MLOS_ERR_UNSUPPORTED, "cannot enable controllers below " + (dir.empty() ? "/" : dir) +
                                                  ": it has processes of its own (cgroup v2 allows no internal "
                                                  "processes); delegate an empty subtree to mlosd");
    }
    return s;
  }

  std::shared_ptr<CgroupFs> fs_;
  std::string base_;
};

}  // namespace

std::unique_ptr<CgroupDriver> make_cgroup_v2_driver(std::shared_ptr<CgroupFs> root, std::string base) {
  return std::make_unique<CgroupV2Driver>(std::move(root), std::move(base));
}

}  // namespace mlos::os
