// SPDX-License-Identifier: Apache-2.0
#include "engine/local_pressure_feed.h"

#include <algorithm>
#include <cstdint>

namespace mlos {

LocalPressureFeed::LocalPressureFeed(pid_t pid, uint64_t job_budget, const MemoryThresholds& t, std::string proc_root,
                                     bool wakeups)
    : pid_(pid), wakeups_enabled_(wakeups), job_budget_(job_budget), proc_root_(std::move(proc_root)), tracker_(t) {
  auto cg = os::limited_memory_cgroup(pid_, proc_root_);
  if (!cg) {
    note("cgroup", "cannot find the memory cgroup: " + cg.error().describe());
  } else {
    cgroup_ = *cg;
  }
  arm();
}

void LocalPressureFeed::arm() {
  wakeups_.clear();
  if (!wakeups_enabled_) return;
  for (const char* key : {"usage_threshold", "vmpressure", "psi_window", "psi_some", "psi_full"}) notes_.erase(key);
  const MemoryThresholds& t = tracker_.thresholds();
  if (cgroup_ && cgroup_->version == 1) {
    auto mem = os::read_cgroup_memory(*cgroup_);
    if (mem && mem->limit != UINT64_MAX) {
      for (uint64_t bytes : os::usage_thresholds(mem->limit, t)) {
        auto efd = os::v1_usage_threshold_event(*cgroup_, bytes);
        if (efd) {
          wakeups_.add_eventfd(std::move(*efd), MLOS_MEMORY_PRESSURE_NORMAL);
        } else {
          note("usage_threshold", efd.error().describe());
        }
      }
    }
    for (auto [level, means] : {std::pair{"medium", MLOS_MEMORY_PRESSURE_MODERATE},
                                std::pair{"critical", MLOS_MEMORY_PRESSURE_CRITICAL}}) {
      auto efd = os::v1_pressure_level_event(*cgroup_, level);
      if (efd) {
        wakeups_.add_eventfd(std::move(*efd), means);
      } else {
        note("vmpressure", efd.error().describe());
      }
    }
  }
  const std::string psi_path = cgroup_ && cgroup_->version == 2 ? cgroup_->dir + "/memory.pressure"
                                                                 : proc_root_ + "/pressure/memory";
  for (const auto& [kind, means] : os::kPsiTriggerKinds) {
    std::string rounded;
    auto trig = os::open_psi_trigger(psi_path, kind, uint64_t{t.psi_trigger_stall_ms} * 1000,
                                     uint64_t{t.psi_trigger_window_ms} * 1000, &rounded);
    if (trig) {
      wakeups_.add_psi_trigger(std::move(trig->fd), means);
      if (!rounded.empty()) note("psi_window", rounded);
    } else {
      note(std::string("psi_") + kind, trig.error().describe());
    }
  }
}

std::vector<PressureFeed::WaitFd> LocalPressureFeed::fds() const { return wakeups_.fds(); }

void LocalPressureFeed::on_ready(int fd, uint64_t now_ns) {
  if (auto means = wakeups_.consume(fd)) tracker_.kernel_event(*means, now_ns);
}

Result<PressureReport> LocalPressureFeed::sample(uint64_t now_ns) {
  MemoryFigures f;
  if (cgroup_) {
    if (auto mem = os::read_cgroup_memory(*cgroup_); mem && mem->limit != UINT64_MAX) {
      f.consider(mem->limit > mem->working_set ? mem->limit - mem->working_set : 0, mem->limit,
                 MemorySource::kCgroup);
    }
  }
  os::add_node_figures(&f, cgroup_, proc_root_);
  if (job_budget_ > 0) {
    if (auto rss = os::process_resident_bytes(pid_, proc_root_)) {
      f.consider(job_budget_ > *rss ? job_budget_ - *rss : 0, job_budget_, MemorySource::kJob);
    }
  }
  if (f.budget_bytes == 0) return make_error(MLOS_ERR_UNSUPPORTED, "no memory figure could be read");
  return tracker_.observe(f, now_ns);
}

Status LocalPressureFeed::set_thresholds(const MemoryThresholds& t) {
  const bool rearm = t.moderate_headroom != tracker_.thresholds().moderate_headroom ||
                     t.critical_headroom != tracker_.thresholds().critical_headroom ||
                     t.psi_trigger_stall_ms != tracker_.thresholds().psi_trigger_stall_ms ||
                     t.psi_trigger_window_ms != tracker_.thresholds().psi_trigger_window_ms;
  tracker_.set_thresholds(t);
  if (rearm) arm();
  return Status::Ok();
}

std::string LocalPressureFeed::notes() const {
  std::string out;
  for (const auto& [key, reason] : notes_) out += (out.empty() ? "" : "; ") + reason;
  return out;
}

}  // namespace mlos
