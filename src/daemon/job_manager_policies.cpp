// SPDX-License-Identifier: Apache-2.0
// JobManager and policy modules: the figures policies read, the grant
// checks on what they ask for, and taking their effects back when they
// detach or fail. See policy/policy_hosts.h and docs/policies.md.
#include <algorithm>

#include "daemon/job_manager.h"
#include "os/log_sink.h"

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
  const JobSample s = sample(j);
  policy::JobFigureSources in;
  in.job = id;
  in.now_ns = d_.now_ns();
  if (j.marked) in.phase = j.phase;
  std::copy(std::begin(s.phase_seconds), std::end(s.phase_seconds), in.phase_seconds);
  std::copy(std::begin(s.phase_entries), std::end(s.phase_entries), in.phase_entries);
  in.priority = j.record.priority;
  in.cpus = j.record.cpus;
  const auto mems = j.record.mems.to_vector();
  in.primary_node = mems.empty() ? -1 : mems.front();
  in.recommended_threads = grant_threads(j);
  in.cpu_seconds = s.cpu_seconds;
  if (d_.process_cpu_seconds) {
    auto [own, fresh] = turn_.owner_cpu_seconds.try_emplace(j.record.owner.pid);
    if (fresh) {
      if (auto read = d_.process_cpu_seconds(j.record.owner.pid)) own->second = *read;
    }
    in.owner_cpu_seconds = own->second;
  }
  if (d_.cpu_busy_seconds) {
    auto [busy, fresh] = turn_.busy_seconds.try_emplace(j.record.cpus.to_list());
    if (fresh) {
      if (auto read = d_.cpu_busy_seconds(j.record.cpus)) busy->second = *read;
    }
    in.cpus_busy_seconds = busy->second;
  }
  in.memory_bytes = s.memory_bytes;
  in.memory_limit_bytes = j.record.memory_bytes;
  in.memory_pressure_level = s.memory_pressure_level;
  if (s.activity) in.collective_seconds = static_cast<double>(s.activity->collective_ns) / 1e9;
  return policy::job_figures(in);
}

policy::GrantScope JobManager::grant_scope(const Live& j) const {
  policy::GrantScope scope;
  scope.cpus = j.record.cpus.count();
  scope.uid = j.record.uid;
  scope.memory_limit = j.record.memory_bytes;
  if (!d_.cgroups) scope.no_cpu_weight = "mlosd runs without cgroups";
  if (!d_.cgroups || j.record.parent != 0 || j.record.host != 0) scope.no_memory = "the job has no cgroup of its own";
  // The v1 driver can only note memory.low: nothing would protect the job.
  if (cgroup_version_ == "v1") scope.no_memory_low = "cgroup v1 has no memory protection (memory.low is v2 only)";
  scope.no_io_weight = "mlosd's cgroup drivers set no I/O weight yet";
  return scope;
}

Status JobManager::apply_policy_action(const std::string& policy, const policy::Action& a) {
  auto it = jobs_.find(a.job);
  if (it == jobs_.end()) return make_error(MLOS_ERR_NOT_FOUND, "job " + std::to_string(a.job) + " is gone");
  Live& j = it->second;
  auto granted = j.policy.grant(policy, a, grant_scope(j), policy_ops_);
  if (!granted) return granted.error();
  if (*granted == policy::PolicyGranted::kCpuWeight) refresh_after_policy(j);
  if (*granted == policy::PolicyGranted::kMemory) cgroups_.apply(j, false);
  return Status::Ok();  // a report is shown from memory: nothing to publish
}

void JobManager::take_back_policy(const std::string& policy, uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  Live& j = it->second;
  const policy::PolicyTakenBack back = j.policy.take_back(policy, job, policy_ops_);
  if (!back.effects) return;
  if (back.memory && j.record.parent == 0 && j.record.host == 0) cgroups_.apply(j, false);
  refresh_after_policy(j);
}

void JobManager::refresh_after_policy(Live& j) {
  // The weight lands on the cgroup that holds the job: its own, or its
  // envelope's. The phase is not read again: the policy answered the
  // change that follow_phase already saw (one pass, no second round trip).
  if (Live* top = cgroup_holder(j)) cgroups_.refresh(*top);
}

policy::PolicyHosts::Verdict JobManager::note_policy_failure(uint64_t id, std::string note_prefix,
                                                             std::string note_suffix) {
  // The job may be gone when the verdict comes: looked up then, by id.
  return [this, id, prefix = std::move(note_prefix), suffix = std::move(note_suffix)](Status s) {
    auto it = jobs_.find(id);
    if (s || it == jobs_.end()) return;
    std::vector<std::string>& notes = it->second.notes;
    const std::string note = prefix + s.error().message + suffix;
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  };
}

std::vector<PendingReplies::Ask> JobManager::default_policy_asks(const Live& j) {
  std::vector<PendingReplies::Ask> asks;
  if (!policies_) return asks;
  const uint64_t id = j.record.id;
  for (const std::string& name : d_.default_policies) {
    if (j.record.policies.contains(name)) continue;
    asks.push_back([this, id, name](policy::PolicyHosts::Verdict done) {
      auto note = note_policy_failure(id, "default policy " + name + ": ", "; built-in defaults apply");
      policies_->attach_async(name, id, json::object(), [note = std::move(note), done = std::move(done)](Status s) {
        note(s);
        done(Status::Ok());  // a default that fails is a note, never a refusal
      });
    });
  }
  return asks;
}

void JobManager::reattach_policies(Live& j) {
  if (!policies_) return;
  const uint64_t id = j.record.id;
  for (const auto& [name, config] : j.record.policies.items()) {
    policies_->attach_async(name, id, config, note_policy_failure(id, "policy " + name + ": not attached again (", ")"));
  }
  for (const PendingReplies::Ask& ask : default_policy_asks(j)) ask([](Status) {});
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
  return replies_.after(
      {[this, name, job, config](policy::PolicyHosts::Verdict v) { policies_->attach_async(name, job, config, std::move(v)); }},
      [this, name, job, config](const std::optional<Error>& refused) -> Result<json> {
        if (refused) return *refused;
        auto it = jobs_.find(job);
        if (it == jobs_.end()) return make_error(MLOS_ERR_INVALID_HANDLE, "job " + std::to_string(job) + " ended meanwhile");
        it->second.policy.requests().owner_took(name);
        it->second.record.policies[name] = config;
        if (Status s = persist(it->second); !s) return s.error();
        return json{{"policies", policies_->policies_of(job)}};
      });
}

Status JobManager::release_policy(const os::PeerCredentials& peer, uint64_t job, const std::string& name) {
  auto j = owned_job(peer, job);
  if (!j) return j.error();
  if (!policies_) return make_error(MLOS_ERR_NOT_FOUND, "this mlosd runs without policy modules");
  if (Status s = policies_->detach(name, job); !s) return s;
  (*j)->policy.requests().owner_took(name);
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
  const auto& t = j.policy.effects().threads;
  const auto& w = j.policy.effects().cpu_weight;
  return json{{"threads", j.policy.threads(grant_threads(j))},
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

Result<json> JobManager::load_policy(const os::PeerCredentials& peer, const std::string& name) {
  if (peer.uid != 0) return make_error(MLOS_ERR_PERMISSION, "only root loads policies ahead of jobs");
  if (!policies_) return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
  return replies_.after({[this, name](policy::PolicyHosts::Verdict v) { policies_->load_async(name, std::move(v)); }},
                        [](const std::optional<Error>& refused) -> Result<json> {
                          if (refused) return *refused;
                          return json::object();
                        });
}

Status JobManager::unload_policy(const os::PeerCredentials& peer, const std::string& name) {
  if (peer.uid != 0) return make_error(MLOS_ERR_PERMISSION, "only root unloads policies");
  if (!policies_) return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
  return policies_->unload(name);
}

std::vector<int> JobManager::policy_fds() const { return policies_ ? policies_->fds() : std::vector<int>{}; }

void JobManager::policy_woke() {
  turn_ = {};
  poll_policies();
}

void JobManager::poll_policies() {
  if (!policies_) return;
  policies_->poll();
  policy::run_job_policy_ops(
      policy_ops_, *policies_,
      [this](uint64_t id) -> policy::JobPolicyRequests* {
        auto it = jobs_.find(id);
        return it == jobs_.end() ? nullptr : &it->second.policy.requests();
      },
      [](uint64_t) {});  // shown from memory: nothing to publish
}

}  // namespace mlos::daemon
