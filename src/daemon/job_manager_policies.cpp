// SPDX-License-Identifier: Apache-2.0
// JobManager and policy modules: the figures policies read, the grant
// checks on what they ask for, and taking their effects back when they
// detach or fail. See policy/policy_hosts.h and docs/policies.md.
#include <algorithm>

#include "daemon/job_manager.h"
#include "os/log_sink.h"
#include "policy/file_advice.h"

namespace mlos::daemon {

using nlohmann::json;

int JobManager::grant_threads(const Live& j) const { return std::max(1, d_.topology.physical_cores_in(j.record.cpus)); }

policy::PolicyHosts::Callbacks JobManager::policy_callbacks() {
  policy::PolicyHosts::Callbacks cb;
  cb.figures = [this](uint64_t job) { return policy_figures(job); };
  cb.apply = [this](const std::string& p, const policy::Action& a) { return apply_policy_action(p, a); };
  cb.reset = [this](const std::string& p, uint64_t job) { take_back_policy(p, job); };
  cb.now_ns = [this] { return d_.now_ns(); };
  return cb;
}

std::optional<mlos_policy_job_figures_t> JobManager::policy_figures(uint64_t id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  const Live& j = it->second;
  mlos_policy_job_figures_t f = policy::empty_figures(id);
  f.now_seconds = static_cast<double>(d_.now_ns()) / 1e9;
  f.phase = j.marked ? j.phase : MLOS_TRAINING_PHASE_IDLE;
  f.priority = j.record.priority;
  const JobSample s = sample(j);
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    f.phase_seconds[p] = s.phase_seconds[p];
    f.phase_entries[p] = s.phase_entries[p];
  }
  policy::set_figure_cpus(f, j.record.cpus);
  const auto mems = j.record.mems.to_vector();
  f.primary_node = mems.empty() ? -1 : mems.front();
  f.recommended_threads = grant_threads(j);
  if (s.cpu_seconds) f.cpu_seconds = *s.cpu_seconds;
  if (d_.process_cpu_seconds) {
    if (auto own = d_.process_cpu_seconds(j.record.owner.pid)) f.owner_cpu_seconds = *own;
  }
  if (d_.cpu_busy_seconds) {
    if (auto busy = d_.cpu_busy_seconds(j.record.cpus)) f.cpus_busy_seconds = *busy;
  }
  if (s.memory_bytes) {
    f.memory_bytes = *s.memory_bytes;
    f.memory_known = 1;
  }
  f.memory_limit_bytes = j.record.memory_bytes;
  if (s.memory_pressure_level) f.memory_pressure_level = *s.memory_pressure_level;
  if (s.activity) f.collective_seconds = static_cast<double>(s.activity->collective_ns) / 1e9;
  return f;
}

Status JobManager::apply_policy_action(const std::string& policy, const policy::Action& a) {
  auto it = jobs_.find(a.job);
  if (it == jobs_.end()) return make_error(MLOS_ERR_NOT_FOUND, "job " + std::to_string(a.job) + " is gone");
  Live& j = it->second;
  const uint64_t limit = j.record.memory_bytes;
  switch (a.kind) {
    case policy::ActionKind::kCpuWeight:
      if (a.value < 1 || a.value > 10000) return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu weight outside 1..10000");
      if (!d_.cgroups) return make_error(MLOS_ERR_UNSUPPORTED, "mlosd runs without cgroups");
      j.effects.cpu_weight.set(static_cast<uint32_t>(a.value), policy);
      refresh_after_policy(j);
      return Status::Ok();
    case policy::ActionKind::kThreads:
      return j.effects.advise_threads(a.value, j.record.cpus.count(), policy);
    case policy::ActionKind::kMemoryHigh:
    case policy::ActionKind::kMemoryLow: {
      if (limit == 0) return make_error(MLOS_ERR_PERMISSION, "the job has no memory limit for a policy to stay within");
      if (a.value > limit) {
        return make_error(MLOS_ERR_PERMISSION, std::to_string(a.value) + " bytes is over the job's limit (" +
                                                   std::to_string(limit) + ")");
      }
      if (!d_.cgroups || j.record.parent != 0 || j.record.host != 0) {
        return make_error(MLOS_ERR_UNSUPPORTED, "the job has no cgroup of its own");
      }
      if (a.kind == policy::ActionKind::kMemoryLow && cgroup_version_ == "v1") {
        // Accepting it would tell the policy the job is protected when
        // nothing is (the v1 driver can only note it).
        return make_error(MLOS_ERR_UNSUPPORTED, "cgroup v1 has no memory protection (memory.low is v2 only)");
      }
      auto& setting = a.kind == policy::ActionKind::kMemoryHigh ? j.effects.memory_high : j.effects.memory_low;
      setting.set(a.value, policy);
      apply_cgroup(j, false);
      return Status::Ok();
    }
    case policy::ActionKind::kIoWeight:
      return make_error(MLOS_ERR_UNSUPPORTED, "mlosd's cgroup drivers set no I/O weight yet");
    case policy::ActionKind::kFileAdvice:
      return policy::advise_file(a.path, j.record.uid, a.value, a.offset, a.length);
    case policy::ActionKind::kRequestPolicy:
    case policy::ActionKind::kReleasePolicy:
    case policy::ActionKind::kRecommendPlacement:
    case policy::ActionKind::kReport:
      // Shown in the job's status; a placement is only recommended (a new
      // request is the only way to change one).
      return j.requests.take(policy, a, policy_ops_);
  }
  return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown action");
}

void JobManager::take_back_policy(const std::string& policy, uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  Live& j = it->second;
  const bool memory = (j.effects.memory_high.value && j.effects.memory_high.by == policy) ||
                      (j.effects.memory_low.value && j.effects.memory_low.by == policy);
  (void)j.requests.take_back(policy, job, policy_ops_);
  if (!j.effects.take_back(policy)) return;
  if (memory && j.record.parent == 0 && j.record.host == 0) apply_cgroup(j, false);
  refresh_after_policy(j);
}

void JobManager::refresh_after_policy(Live& j) {
  // The weight lands on the cgroup that holds the job: its own, or its
  // envelope's (follow_phase walks up and refreshes that one).
  follow_phase(j);
}

Status JobManager::attach_policies(Live& j, bool strict) {
  if (!policies_) {
    if (strict && !j.record.policies.empty()) {
      return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
    }
    return Status::Ok();
  }
  const uint64_t id = j.record.id;
  for (const auto& [name, config] : j.record.policies.items()) {
    Status s = policies_->attach(name, id, config);
    if (s) continue;
    if (strict) return s;
    j.notes.push_back("policy " + name + ": not attached again (" + s.error().message + ")");
  }
  for (const std::string& name : d_.default_policies) {
    if (j.record.policies.contains(name)) continue;
    if (Status s = policies_->attach(name, id, json::object()); !s) {
      const std::string note = "default policy " + name + ": " + s.error().message + "; built-in defaults apply";
      if (std::find(j.notes.begin(), j.notes.end(), note) == j.notes.end()) j.notes.push_back(note);
    }
  }
  return Status::Ok();
}

Result<json> JobManager::request_policy(const os::PeerCredentials& peer, uint64_t job, const std::string& name,
                                        const json& config) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!policies_) return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
  if (!config.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "a policy's config must be a JSON object");
  if ((*j)->record.ledger_claim != 0) {
    return make_error(MLOS_ERR_UNSUPPORTED, "job " + std::to_string(job) + " is an embedded-ledger claim");
  }
  if (Status s = policies_->attach(name, job, config); !s) return s.error();
  (*j)->requests.owner_took(name);
  (*j)->record.policies[name] = config;
  if (Status s = persist(**j); !s) return s.error();
  return json{{"policies", policies_->policies_of(job)}};
}

Status JobManager::release_policy(const os::PeerCredentials& peer, uint64_t job, const std::string& name) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!policies_) return make_error(MLOS_ERR_NOT_FOUND, "this mlosd runs without policy modules");
  if (Status s = policies_->detach(name, job); !s) return s;
  (*j)->requests.owner_took(name);
  (*j)->record.policies.erase(name);
  return persist(**j);
}

json JobManager::advice_json(const Live& j) const {
  json failed = json::array();
  std::vector<std::string> names;
  if (policies_) {
    names = policies_->policies_of(j.record.id);
    for (const auto& [name, why] : policies_->failed_policies_of(j.record.id)) {
      failed.push_back(json{{"name", name}, {"why", why}});
    }
  }
  const auto& t = j.effects.threads;
  const auto& w = j.effects.cpu_weight;
  return json{{"threads", t.value ? *t.value : grant_threads(j)},
              {"threads_advised", t.value.has_value()},
              {"threads_by", t.value ? json(t.by) : json(nullptr)},
              {"cpu_weight", j.weight != 0 ? json(j.weight) : json(nullptr)},
              {"cpu_weight_by", w.value ? json(w.by) : json(nullptr)},
              {"policies", names},
              {"failed_policies", std::move(failed)}};
}

Result<json> JobManager::advice(uint64_t job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return make_error(MLOS_ERR_INVALID_HANDLE, "no job " + std::to_string(job));
  return json{{"advice", advice_json(it->second)}};
}

json JobManager::policies_status() const {
  if (!policies_) {
    return json{{"enabled", false}, {"dir", nullptr}, {"available", json::array()}, {"skipped", json::array()},
                {"loaded", json::array()}, {"defaults", json::array()}};
  }
  json out = policies_->overview();
  out["enabled"] = true;
  out["defaults"] = d_.default_policies;
  return out;
}

json JobManager::loaded_policies() const { return policies_ ? policies_->status() : json::array(); }

Status JobManager::load_policy(const os::PeerCredentials& peer, const std::string& name) {
  if (peer.uid != 0) return make_error(MLOS_ERR_PERMISSION, "only root loads policies ahead of jobs");
  if (!policies_) return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
  return policies_->load(name);
}

Status JobManager::unload_policy(const os::PeerCredentials& peer, const std::string& name) {
  if (peer.uid != 0) return make_error(MLOS_ERR_PERMISSION, "only root unloads policies");
  if (!policies_) return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
  return policies_->unload(name);
}

std::vector<int> JobManager::policy_fds() const { return policies_ ? policies_->fds() : std::vector<int>{}; }

void JobManager::policy_woke() { poll_policies(); }

void JobManager::poll_policies() {
  if (!policies_) return;
  policies_->poll();
  policy::run_job_policy_ops(
      policy_ops_, *policies_,
      [this](uint64_t id) -> policy::JobPolicyRequests* {
        auto it = jobs_.find(id);
        return it == jobs_.end() ? nullptr : &it->second.requests;
      },
      [](uint64_t) {});  // shown from memory: nothing to publish
}

}  // namespace mlos::daemon
