// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_grant.h"

#include <algorithm>

#include "policy/file_advice.h"

namespace mlos::policy {

namespace {

bool is_cgroup_setting(ActionKind kind) {
  return kind == ActionKind::kCpuWeight || kind == ActionKind::kMemoryHigh || kind == ActionKind::kMemoryLow ||
         kind == ActionKind::kIoWeight;
}

Error unsupported(const std::string& why) { return make_error(MLOS_ERR_UNSUPPORTED, why); }

}  // namespace

Result<PolicyGranted> PolicyGrant::grant(const std::string& by, const Action& a, const GrantScope& scope,
                                         std::deque<JobPolicyOp>& ops) {
  if (is_cgroup_setting(a.kind) && !scope.no_cgroups.empty()) {
    return unsupported(std::string(action_kind_name(a.kind)) + ": " + scope.no_cgroups);
  }
  switch (a.kind) {
    case ActionKind::kCpuWeight:
      if (a.value < 1 || a.value > 10000) return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu weight outside 1..10000");
      if (!scope.no_cpu_weight.empty()) return unsupported(scope.no_cpu_weight);
      effects_.cpu_weight.set(static_cast<uint32_t>(a.value), by);
      return PolicyGranted::kCpuWeight;
    case ActionKind::kThreads:
      if (Status s = effects_.advise_threads(a.value, scope.cpus, by); !s) return s.error();
      return PolicyGranted::kNothingToCarryOut;
    case ActionKind::kMemoryHigh:
    case ActionKind::kMemoryLow: {
      if (scope.memory_limit == 0) {
        return make_error(MLOS_ERR_PERMISSION, "the job has no memory limit for a policy to stay within");
      }
      if (a.value > scope.memory_limit) {
        return make_error(MLOS_ERR_PERMISSION, std::to_string(a.value) + " bytes is over the job's limit (" +
                                                   std::to_string(scope.memory_limit) + ")");
      }
      if (!scope.no_memory.empty()) return unsupported(scope.no_memory);
      // Accepting memory.low where nothing protects would tell the policy
      // the job is protected when it is not.
      if (a.kind == ActionKind::kMemoryLow && !scope.no_memory_low.empty()) return unsupported(scope.no_memory_low);
      (a.kind == ActionKind::kMemoryHigh ? effects_.memory_high : effects_.memory_low).set(a.value, by);
      return PolicyGranted::kMemory;
    }
    case ActionKind::kIoWeight:
      return unsupported(scope.no_io_weight.empty() ? "no I/O weight can be set" : scope.no_io_weight);
    case ActionKind::kFileAdvice:
      if (Status s = advise_file(a.path, scope.uid, a.value, a.offset, a.length); !s) return s.error();
      return PolicyGranted::kNothingToCarryOut;
    case ActionKind::kRequestPolicy:
    case ActionKind::kReleasePolicy:
    case ActionKind::kRecommendPlacement:
    case ActionKind::kReport:
      // A placement is only recommended (a new request is the only way to
      // change one); requests and releases run once the hosts are polled.
      if (Status s = requests_.take(by, a, ops); !s) return s.error();
      return JobPolicyRequests::shows(a.kind) ? PolicyGranted::kReport : PolicyGranted::kQueued;
  }
  return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown action");
}

PolicyTakenBack PolicyGrant::take_back(const std::string& by, uint64_t job, std::deque<JobPolicyOp>& ops) {
  PolicyTakenBack out;
  out.memory = (effects_.memory_high.value && effects_.memory_high.by == by) ||
               (effects_.memory_low.value && effects_.memory_low.by == by);
  out.report = requests_.take_back(by, job, ops);
  out.effects = effects_.take_back(by);
  out.memory = out.memory && out.effects;
  return out;
}

int PolicyGrant::threads(int recommended) const {
  return effects_.threads.value ? *effects_.threads.value : std::max(1, recommended);
}

mlos_policy_job_figures_t job_figures(const JobFigureSources& in) {
  mlos_policy_job_figures_t f = empty_figures(in.job);
  f.now_seconds = static_cast<double>(in.now_ns) / 1e9;
  f.phase = in.phase.value_or(MLOS_TRAINING_PHASE_IDLE);
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    f.phase_seconds[p] = in.phase_seconds[p];
    f.phase_entries[p] = in.phase_entries[p];
  }
  f.priority = in.priority;
  set_figure_cpus(f, in.cpus);
  f.primary_node = in.primary_node;
  f.recommended_threads = in.recommended_threads;
  if (in.cpu_seconds) f.cpu_seconds = *in.cpu_seconds;
  if (in.owner_cpu_seconds) f.owner_cpu_seconds = *in.owner_cpu_seconds;
  if (in.cpus_busy_seconds) f.cpus_busy_seconds = *in.cpus_busy_seconds;
  if (in.memory_bytes) {
    f.memory_bytes = *in.memory_bytes;
    f.memory_known = 1;
  }
  f.memory_limit_bytes = in.memory_limit_bytes;
  if (in.memory_pressure_level) f.memory_pressure_level = *in.memory_pressure_level;
  if (in.collective_seconds) f.collective_seconds = *in.collective_seconds;
  return f;
}

}  // namespace mlos::policy
