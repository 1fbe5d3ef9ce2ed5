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
    auto [own, fresh] = turn_.owner_cpu_seconds.try_emplace(j.record.owner.pid);
    if (fresh) {
      if (auto read = d_.process_cpu_seconds(j.record.owner.pid)) own->second = *read;
    }
    if (own->second) f.owner_cpu_seconds = *own->second;
  }
  if (d_.cpu_busy_seconds) {
    auto [busy, fresh] = turn_.busy_seconds.try_emplace(j.record.cpus.to_list());
    if (fresh) {
      if (auto read = d_.cpu_busy_seconds(j.record.cpus)) busy->second = *read;
    }
    if (busy->second) f.cpus_busy_seconds = *busy->second;
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
  // envelope's. The phase is not read again: the policy answered the
  // change that follow_phase already saw (one pass, no second round trip).
  if (Live* top = cgroup_holder(j)) refresh_cgroup(*top);
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

std::vector<JobManager::VerdictAsk> JobManager::default_policy_asks(const Live& j) {
  std::vector<VerdictAsk> asks;
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
  for (const VerdictAsk& ask : default_policy_asks(j)) ask([](Status) {});
}

std::optional<uint64_t> JobManager::pending_token(const json& reply) {
  auto it = reply.find("pending");
  if (it == reply.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

Result<json> JobManager::after_verdicts(const std::vector<VerdictAsk>& asks, FinishReply finish) {
  const uint64_t token = next_token_++;
  PendingReply& p = pending_[token];
  p.outstanding = asks.size() + 1;  // one held until every ask is made: no reply finishes early
  p.finish = std::move(finish);
  for (const VerdictAsk& ask : asks) {
    ask([this, token](Status s) {
      if (auto reply = verdict_in(token, s)) finished_.push_back(FinishedReply{token, std::move(*reply)});
    });
  }
  if (auto reply = verdict_in(token, Status::Ok())) return std::move(*reply);
  return json{{"pending", token}};
}

std::optional<Result<json>> JobManager::verdict_in(uint64_t token, const Status& verdict) {
  auto it = pending_.find(token);
  if (it == pending_.end()) return std::nullopt;
  PendingReply& p = it->second;
  if (!verdict && !p.refused) p.refused = verdict.error();
  if (--p.outstanding > 0) return std::nullopt;
  FinishReply finish = std::move(p.finish);
  const std::optional<Error> refused = p.refused;
  pending_.erase(it);
  return finish(refused);
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
  return after_verdicts(
      {[this, name, job, config](policy::PolicyHosts::Verdict v) { policies_->attach_async(name, job, config, std::move(v)); }},
      [this, name, job, config](const std::optional<Error>& refused) -> Result<json> {
        if (refused) return *refused;
        auto it = jobs_.find(job);
        if (it == jobs_.end()) return make_error(MLOS_ERR_INVALID_HANDLE, "job " + std::to_string(job) + " ended meanwhile");
        it->second.requests.owner_took(name);
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

Result<json> JobManager::load_policy(const os::PeerCredentials& peer, const std::string& name) {
  if (peer.uid != 0) return make_error(MLOS_ERR_PERMISSION, "only root loads policies ahead of jobs");
  if (!policies_) return make_error(MLOS_ERR_UNSUPPORTED, "this mlosd runs without policy modules");
  return after_verdicts({[this, name](policy::PolicyHosts::Verdict v) { policies_->load_async(name, std::move(v)); }},
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
        return it == jobs_.end() ? nullptr : &it->second.requests;
      },
      [](uint64_t) {});  // shown from memory: nothing to publish
}

}  // namespace mlos::daemon
