// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_hosts.h"

#include <unistd.h>

#include <algorithm>

#include "mlos/log.h"
#include "os/log_sink.h"
#include "os/process_memory.h"
#include "policy/trusted_module.h"

namespace mlos::policy {

using nlohmann::json;

namespace {

constexpr uint64_t kMs = 1000000;

// Nanoseconds from `since` to `now`, 0 if `since` is later (a time taken
// before an event that was stamped after it).
uint64_t elapsed(uint64_t now, uint64_t since) { return now > since ? now - since : 0; }

const char* state_name(int s) {
  static const char* names[] = {"starting", "running", "failed"};
  return names[s];
}

mlos_log_level_t log_level_of(int policy_level) {
  switch (policy_level) {
    case MLOS_POLICY_LOG_ERROR: return MLOS_LOG_ERROR;
    case MLOS_POLICY_LOG_WARN: return MLOS_LOG_WARN;
    case MLOS_POLICY_LOG_DEBUG: return MLOS_LOG_DEBUG;
    default: return MLOS_LOG_INFO;
  }
}

// Resident memory of process `pid`, null if unreadable.
json resident_bytes(pid_t pid) {
  auto bytes = os::process_resident_bytes(pid);
  return bytes ? json(*bytes) : json(nullptr);
}

}  // namespace

PolicyHosts::PolicyHosts(PolicyHostsOptions options, Callbacks callbacks)
    : o_(std::move(options)), cb_(std::move(callbacks)) {}

PolicyHosts::~PolicyHosts() {
  for (auto& [name, l] : loaded_) stop_host(l);
}

Result<PolicyCatalog> PolicyHosts::catalog() const { return scan_policy_dir(o_.policy_dir, o_.also_trusted); }

Result<PolicyHosts::Loaded*> PolicyHosts::loaded_or_spawn(const std::string& name) {
  if (auto it = loaded_.find(name); it != loaded_.end() && !it->second.discard) return &it->second;
  reap_discarded();
  auto cat = catalog();
  if (!cat) return cat.error();
  const CatalogEntry* entry = cat->find(name);
  if (entry == nullptr) return unknown_policy(*cat, name);
  Loaded& l = loaded_[name];
  l.name = name;
  l.path = entry->path;
  l.backoff_ms = o_.backoff_initial_ms;
  if (Status s = start(l); !s) {
    loaded_.erase(name);
    return s.error();
  }
  // Not waited for: its first verdict (init's, then each attach's) goes to
  // the waiters. A policy the host refuses (cannot load it, ABI, bad node
  // config) is not kept; a crash or a hang on the way up is kept as a
  // failure with its backoff, so that requests meanwhile are answered at
  // once instead of each starting another host (it is unloaded a grace
  // period after its restart time, having no job).
  return &l;
}

Error PolicyHosts::failed_now(Loaded& l) {
  if (l.discard) {  // refused on its first start: the refusal, and it is not kept
    Error e = l.refusal ? *l.refusal : make_error(MLOS_ERR_POLICY_FAILED, "policy '" + l.name + "' was refused");
    reap_discarded();
    return e;
  }
  if (!l.ever_ran && l.restarts == 0) {
    return make_error(MLOS_ERR_POLICY_FAILED, "policy '" + l.name + "' failed to start: " + l.last_failure);
  }
  return make_error(MLOS_ERR_POLICY_FAILED,
                    "policy '" + l.name + "' failed (" + l.last_failure + "); restart in " +
                        std::to_string((l.restart_at_ns > now() ? l.restart_at_ns - now() : 0) / kMs) + " ms");
}

void PolicyHosts::decide(Verdict done, Status verdict) { ready_.emplace_back(std::move(done), std::move(verdict)); }

void PolicyHosts::deliver_ready() {
  if (delivering_) return;  // a verdict's callback asked for more: the loop below delivers it
  delivering_ = true;
  while (!ready_.empty()) {
    auto [done, verdict] = std::move(ready_.front());
    ready_.erase(ready_.begin());
    done(std::move(verdict));
  }
  delivering_ = false;
}

void PolicyHosts::reap_discarded() {
  for (auto it = loaded_.begin(); it != loaded_.end();) {
    if (!it->second.discard) {
      ++it;
      continue;
    }
    stop_host(it->second);
    it = loaded_.erase(it);
  }
}

void PolicyHosts::abandon_waiters(Loaded& l, const Error& why) {
  for (auto& [job, waiters] : l.attach_waiters) {
    for (Verdict& v : waiters) decide(std::move(v), why);
  }
  l.attach_waiters.clear();
  for (Verdict& v : l.load_waiters) decide(std::move(v), why);
  l.load_waiters.clear();
}

Status PolicyHosts::start(Loaded& l) {
  auto module = open_trusted_module(l.path, o_.also_trusted);
  if (!module) return module.error();
  if (o_.after_module_check) o_.after_module_check(l.path);
  HostLaunch launch{o_.host_binary, l.path, l.name, o_.run_as, o_.memory_limit, module->get()};
  auto host = PolicyHostProcess::spawn(launch);
  if (!host) return host.error();
  l.host = std::move(*host);
  l.state = State::kStarting;
  l.started_ns = now();
  l.in_flight.reset();
  l.queue.clear();
  const json config = o_.node_config.contains(l.name) ? o_.node_config[l.name] : json::object();
  enqueue(l, Event{"init", json{{"config", config}}, 0});
  for (const auto& [job, job_config] : l.jobs) {
    enqueue(l, Event{"attach", json{{"job", job}, {"config", job_config}, {"figures", figures_json(job)}}, job});
  }
  return Status::Ok();
}

void PolicyHosts::fail(Loaded& l, const std::string& why) {
  const std::string ended = l.host ? l.host->terminate() : "not running";
  l.host.reset();
  const bool was_stable =
      l.state == State::kRunning && elapsed(now(), l.started_ns) >= static_cast<uint64_t>(o_.stable_after_ms) * kMs;
  if (was_stable) l.backoff_ms = o_.backoff_initial_ms;
  l.state = State::kFailed;
  l.last_failure = why + " (host " + ended + ")";
  ++l.failures;
  l.restart_at_ns = now() + static_cast<uint64_t>(l.backoff_ms) * kMs;
  l.backoff_ms = std::min(o_.backoff_max_ms, l.backoff_ms * 2);
  l.in_flight.reset();
  l.queue.clear();
  // Who waits is answered now. The host's own refusal is the answer, and
  // a policy refused on its first start is not kept; a start that failed
  // otherwise attaches nobody; a running policy that failed keeps its jobs.
  const bool never_ran = !l.ever_ran;
  if (never_ran && l.refusal) l.discard = true;
  for (auto& [job, waiters] : l.attach_waiters) {
    const Error e = l.refusal ? *l.refusal
                    : never_ran
                        ? make_error(MLOS_ERR_POLICY_FAILED, "policy '" + l.name + "' failed to start: " + l.last_failure)
                        : make_error(MLOS_ERR_POLICY_FAILED, "policy '" + l.name + "' failed while attaching job " +
                                                                 std::to_string(job) + ": " + l.last_failure);
    if (never_ran) l.jobs.erase(job);
    for (Verdict& v : waiters) decide(std::move(v), e);
  }
  l.attach_waiters.clear();
  abandon_waiters(l, l.refusal ? *l.refusal
                               : make_error(MLOS_ERR_POLICY_FAILED, "policy '" + l.name + "' failed to start: " + l.last_failure));
  log_message(MLOS_LOG_WARN, "policy " + l.name + " failed: " + l.last_failure + "; its " +
                                 std::to_string(l.jobs.size()) + " job(s) run on the built-in defaults, restart in " +
                                 std::to_string((l.restart_at_ns - now()) / kMs) + " ms");
  for (const auto& [job, config] : l.jobs) cb_.reset(l.name, job);
}

void PolicyHosts::enqueue(Loaded& l, Event e) {
  if (e.op == "tick") {
    // One tick waiting is enough: a slow policy gets fresh figures, not a
    // backlog.
    for (const Event& q : l.queue) {
      if (q.op == "tick") return;
    }
  }
  l.queue.push_back(std::move(e));
  dispatch(l);
}

void PolicyHosts::enqueue_tick(Loaded& l) {
  for (const Event& q : l.queue) {
    if (q.op == "tick") return;  // see enqueue(): no backlog of ticks
  }
  // Every job's figures, in frames of at most kMaxTickFiguresBytes: all
  // but the last as "figures" events (the host only records them), the
  // last as the tick itself, so the policy's tick sees them all fresh
  // whatever the number of jobs. Events go one at a time, in order.
  json chunk = json::array();
  size_t bytes = 0;
  for (const auto& [job, config] : l.jobs) {
    json f = figures_json(job);
    const size_t size = f.dump().size() + 1;
    if (!chunk.empty() && bytes + size > kMaxTickFiguresBytes) {
      enqueue(l, Event{"figures", json{{"jobs", std::move(chunk)}}, 0});
      chunk = json::array();
      bytes = 0;
    }
    chunk.push_back(std::move(f));
    bytes += size;
  }
  enqueue(l, Event{"tick", json{{"jobs", std::move(chunk)}}, 0});
}

void PolicyHosts::dispatch(Loaded& l) {
  if (!l.host || l.in_flight || l.queue.empty() || l.state == State::kFailed) return;
  Event e = std::move(l.queue.front());
  l.queue.pop_front();
  if (e.op == "tick") e.args["now"] = static_cast<double>(now()) / 1e9;
  add_reads(l, e);
  auto id = l.host->send(e.op, e.args, o_.deadline_ms);
  if (!id) {
    // A host that refused to load its policy may have exited before this
    // request reached it: its refusal (id 0) is still in the socket, and
    // is the answer.
    if (auto replies = l.host->receive(); replies) {
      for (const HostReply& r : *replies) {
        if (r.id == 0 && r.error) {
          l.refusal = *r.error;
          fail(l, "refused: " + r.error->message);
          return;
        }
      }
    }
    fail(l, "could not send '" + e.op + "': " + id.error().message);
    return;
  }
  l.in_flight = std::move(e);
  l.in_flight_id = *id;
  l.in_flight_since_ns = now();
}

bool PolicyHosts::drain(Loaded& l) {
  if (!l.host) return false;
  auto replies = l.host->receive();
  if (!replies) {
    fail(l, replies.error().message);
    return false;
  }
  for (const HostReply& r : *replies) {
    if (r.id == 0 && r.error) {  // the host could not load the policy
      l.refusal = *r.error;
      fail(l, "refused: " + r.error->message);
      return false;
    }
    if (!l.in_flight || r.id != l.in_flight_id) {
      fail(l, "sent a reply nobody asked for (id " + std::to_string(r.id) + ")");
      return false;
    }
    handle_reply(l, r);
    if (l.state == State::kFailed) return false;
  }
  dispatch(l);
  return l.state != State::kFailed;
}

void PolicyHosts::handle_reply(Loaded& l, const HostReply& r) {
  Event e = std::move(*l.in_flight);
  l.in_flight.reset();
  const double took = static_cast<double>(now() - l.in_flight_since_ns) / 1e9;
  for (const HostLog& line : r.logs) log_message(log_level_of(line.level), "policy " + l.name + ": " + line.message);
  l.dropped_actions += r.dropped_actions;
  if (r.reads_used) l.wants_reads = true;
  if (e.op == "init") {
    if (r.error) {
      l.refusal = *r.error;
      fail(l, "refused: init: " + r.error->message);
      return;
    }
    auto info = policy_info_from_json(r.info);
    if (!info || info->name != l.name) {
      fail(l, info ? "init named the policy '" + info->name + "'" : info.error().message);
      return;
    }
    l.info = *info;
    if (auto it = o_.tick_interval_ms.find(l.name); it != o_.tick_interval_ms.end()) l.info.tick_interval_ms = it->second;
    l.state = State::kRunning;
    l.ever_ran = true;
    l.refusal.reset();
    l.next_tick_ns = now() + static_cast<uint64_t>(l.info.tick_interval_ms) * kMs;
    if (l.restarts + l.failures > 0) log_message(MLOS_LOG_INFO, "policy " + l.name + " is running again");
    if (!l.load_waiters.empty()) l.pinned = true;
    for (Verdict& v : l.load_waiters) decide(std::move(v), Status::Ok());
    l.load_waiters.clear();
    return;
  }
  if (e.op == "attach") {
    std::vector<Verdict> waiters;
    if (auto w = l.attach_waiters.extract(e.job)) waiters = std::move(w.mapped());
    for (Verdict& v : waiters) decide(std::move(v), r.error ? Status(*r.error) : Status::Ok());
    if (!r.error) {
      apply_actions(l, r.actions);
      return;
    }
    // The policy refused this job's config: the job does not use it. A
    // refusal of a re-attach after a restart has nobody waiting, so it is
    // logged.
    if (waiters.empty()) {
      log_message(MLOS_LOG_WARN, "policy " + l.name + " refused job " + std::to_string(e.job) +
                                     " again after a restart: " + r.error->message);
      cb_.reset(l.name, e.job);
    }
    if (l.jobs.erase(e.job) && l.jobs.empty() && !l.pinned) l.idle_since_ns = now();
    return;
  }
  if (r.error) {
    fail(l, "answered '" + e.op + "' with an error: " + r.error->message);
    return;
  }
  if (e.op == "tick") {
    ++l.ticks;
    l.tick_seconds_last = took;
    l.tick_seconds_max = std::max(l.tick_seconds_max, took);
    l.tick_seconds_sum += took;
  }
  apply_actions(l, r.actions);
}

void PolicyHosts::apply_actions(Loaded& l, const std::vector<Action>& actions) {
  for (const Action& a : actions) {
    const int kind = static_cast<int>(a.kind);
    Status s = l.jobs.count(a.job) ? cb_.apply(l.name, a)
                                   : Status(make_error(MLOS_ERR_PERMISSION, "job " + std::to_string(a.job) +
                                                                                " does not use this policy"));
    if (s) {
      ++l.applied[kind];
      continue;
    }
    ++l.refused[kind];
    if (l.refusal_logged.insert(kind).second) {
      log_message(MLOS_LOG_WARN, "policy " + l.name + ": refused " + action_kind_name(a.kind) + " on job " +
                                     std::to_string(a.job) + ": " + s.error().message + " (further refusals are counted)");
    }
  }
}

void PolicyHosts::settle(Loaded& l, uint64_t until_ns) {
  while (l.host && l.state != State::kFailed && (l.in_flight || !l.queue.empty())) {
    dispatch(l);
    if (!l.in_flight) break;
    const uint64_t t = now();
    const uint64_t deadline = l.in_flight_since_ns + static_cast<uint64_t>(l.in_flight->op == "init" ? o_.start_deadline_ms
                                                                                                     : o_.deadline_ms) * kMs;
    const uint64_t until = std::min(until_ns, deadline);
    if (t >= until) {
      fail(l, "hung: no answer to '" + l.in_flight->op + "' within " +
                  std::to_string(elapsed(t, l.in_flight_since_ns) / kMs) + " ms");
      return;
    }
    auto reply = l.host->wait_reply(l.in_flight_id, static_cast<int>((until - t) / kMs) + 1);
    if (!reply) {
      if (reply.error().code == MLOS_ERR_TIMEOUT) continue;  // the deadline check above decides
      fail(l, reply.error().message);
      return;
    }
    if (reply->id == 0 && reply->error) {
      l.refusal = *reply->error;
      fail(l, "refused: " + reply->error->message);
      return;
    }
    handle_reply(l, *reply);
  }
}

Status PolicyHosts::attach(const std::string& name, uint64_t job, const json& config) {
  std::optional<Status> verdict;
  attach_async(name, job, config, [&verdict](Status s) { verdict = std::move(s); });
  wait_for(name, verdict);
  return verdict ? *verdict : Status(make_error(MLOS_ERR_POLICY_FAILED, "policy '" + name + "' gave no verdict"));
}

void PolicyHosts::attach_async(const std::string& name, uint64_t job, const json& config, Verdict done) {
  if (!config.is_object()) return done(make_error(MLOS_ERR_INVALID_ARGUMENT, "a policy's config must be a JSON object"));
  auto l = loaded_or_spawn(name);
  if (!l) return done(l.error());
  Loaded& p = **l;
  if (p.discard) return done(failed_now(p));
  if (auto it = p.jobs.find(job); it != p.jobs.end()) {
    if (it->second != config) {
      return done(make_error(MLOS_ERR_INVALID_ARGUMENT, "job " + std::to_string(job) + " already uses policy '" + name +
                                                            "' with another config: release it first"));
    }
    if (auto w = p.attach_waiters.find(job); w != p.attach_waiters.end()) return w->second.push_back(std::move(done));
    return done(Status::Ok());
  }
  if (p.state == State::kFailed) return done(failed_now(p));
  p.jobs[job] = config;
  p.attach_waiters[job].push_back(std::move(done));
  enqueue(p, Event{"attach", json{{"job", job}, {"config", config}, {"figures", figures_json(job)}}, job});
  deliver_ready();  // a host that could not be sent to failed at once
}

void PolicyHosts::wait_for(const std::string& name, const std::optional<Status>& verdict) {
  const uint64_t until = now() + static_cast<uint64_t>(o_.start_deadline_ms) * kMs;
  while (!verdict) {
    auto it = loaded_.find(name);
    if (it == loaded_.end() || it->second.state == State::kFailed) break;
    const bool busy = it->second.in_flight || !it->second.queue.empty();
    settle(it->second, until);
    deliver_ready();
    if (!busy) break;
  }
  deliver_ready();
  reap_discarded();
}

Status PolicyHosts::detach(const std::string& name, uint64_t job) {
  auto it = loaded_.find(name);
  if (it == loaded_.end() || !it->second.jobs.count(job)) {
    return make_error(MLOS_ERR_NOT_FOUND, "job " + std::to_string(job) + " does not use policy '" + name + "'");
  }
  Loaded& l = it->second;
  l.jobs.erase(job);
  cb_.reset(name, job);
  if (l.jobs.empty() && !l.pinned) l.idle_since_ns = now();
  enqueue(l, Event{"detach", json{{"job", job}}, job});
  return Status::Ok();
}

void PolicyHosts::detach_job(uint64_t job) {
  for (auto& [name, l] : loaded_) {
    if (l.jobs.count(job)) (void)detach(name, job);
  }
}

void PolicyHosts::phase_changed(uint64_t job, int old_phase, int new_phase) {
  notify(job, "phase", json{{"job", job}, {"old", old_phase}, {"new", new_phase}});
}

void PolicyHosts::pressure_changed(uint64_t job, int level) {
  notify(job, "pressure", json{{"job", job}, {"level", level}});
}

void PolicyHosts::notify(uint64_t job, const std::string& op, json args) {
  // The figures cost file reads (cgroup usage, /proc): taken once for all
  // the job's policies, and only if one of them is there to hear it.
  bool figured = false;
  for (auto& [name, l] : loaded_) {
    if (!l.jobs.count(job) || l.state == State::kFailed) continue;
    if (!figured) {
      args["figures"] = figures_json(job);
      figured = true;
    }
    enqueue(l, Event{op, args, job});
  }
}

std::vector<std::pair<std::string, std::string>> PolicyHosts::failed_policies_of(uint64_t job) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, l] : loaded_) {
    if (l.state == State::kFailed && l.jobs.count(job)) out.emplace_back(name, l.last_failure);
  }
  return out;
}

void PolicyHosts::poll() {
  std::vector<std::string> unload;
  for (auto& [name, l] : loaded_) {
    const uint64_t t = now();
    if (l.state == State::kFailed) {
      if ((!l.jobs.empty() || l.pinned) && t >= l.restart_at_ns) {
        ++l.restarts;
        if (Status s = start(l); !s) fail(l, "restart: " + s.error().message);
      } else if (l.jobs.empty() && !l.pinned && t >= l.restart_at_ns &&
                 t - l.restart_at_ns >= static_cast<uint64_t>(o_.unload_grace_ms) * kMs) {
        unload.push_back(name);
      }
      continue;
    }
    if (!drain(l)) continue;
    if (l.in_flight) {
      const uint64_t limit = static_cast<uint64_t>(l.in_flight->op == "init" ? o_.start_deadline_ms : o_.deadline_ms) * kMs;
      if (elapsed(now(), l.in_flight_since_ns) > limit) {
        fail(l, "hung: no answer to '" + l.in_flight->op + "' within " + std::to_string(limit / kMs) + " ms");
        continue;
      }
    }
    if (l.state == State::kRunning && !l.jobs.empty() && t >= l.next_tick_ns) {
      l.next_tick_ns = t + static_cast<uint64_t>(l.info.tick_interval_ms) * kMs;
      enqueue_tick(l);
    }
    if (l.jobs.empty() && !l.pinned && !l.in_flight && l.queue.empty() &&
        elapsed(t, l.idle_since_ns) >= static_cast<uint64_t>(o_.unload_grace_ms) * kMs) {
      unload.push_back(name);
    }
  }
  for (const auto& name : unload) {
    log_message(MLOS_LOG_INFO, "policy " + name + " unloaded: no job has used it for " +
                                   std::to_string(o_.unload_grace_ms) + " ms");
    stop_host(loaded_[name]);
    loaded_.erase(name);
  }
  deliver_ready();
  reap_discarded();
}

Status PolicyHosts::load(const std::string& name) {
  std::optional<Status> verdict;
  load_async(name, [&verdict](Status s) { verdict = std::move(s); });
  wait_for(name, verdict);
  return verdict ? *verdict : Status(make_error(MLOS_ERR_POLICY_FAILED, "policy '" + name + "' gave no verdict"));
}

void PolicyHosts::load_async(const std::string& name, Verdict done) {
  auto l = loaded_or_spawn(name);
  if (!l) return done(l.error());
  Loaded& p = **l;
  if (p.discard || (p.state == State::kFailed && !p.ever_ran && p.restarts == 0)) return done(failed_now(p));
  if (p.state == State::kStarting) return p.load_waiters.push_back(std::move(done));
  // Running, or failed and waiting out its backoff: pinned, it is
  // restarted after it.
  p.pinned = true;
  done(Status::Ok());
}

Status PolicyHosts::unload(const std::string& name) {
  auto it = loaded_.find(name);
  if (it == loaded_.end()) return make_error(MLOS_ERR_NOT_FOUND, "policy '" + name + "' is not loaded");
  if (!it->second.jobs.empty()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "policy '" + name + "' is used by " +
                                                     std::to_string(it->second.jobs.size()) + " job(s)");
  }
  abandon_waiters(it->second, make_error(MLOS_ERR_NOT_FOUND, "policy '" + name + "' was unloaded while starting"));
  stop_host(it->second);
  loaded_.erase(it);
  deliver_ready();
  return Status::Ok();
}

void PolicyHosts::stop_host(Loaded& l) {
  if (!l.host) return;
  // "stop" lets the policy run fini; a host that does not go at once is
  // killed by terminate() (nothing waits on a policy's goodbye).
  if (!l.in_flight && l.state == State::kRunning) (void)l.host->send("stop", json::object(), 50);
  (void)l.host->wait_reply(0, 0);
  l.host->terminate();
  l.host.reset();
}

std::vector<std::string> PolicyHosts::policies_of(uint64_t job) const {
  std::vector<std::string> out;
  for (const auto& [name, l] : loaded_) {
    if (l.jobs.count(job)) out.push_back(name);
  }
  return out;
}

void PolicyHosts::add_reads(const Loaded& l, Event& e) const {
  if (!cb_.reads) return;
  json logs = json::array();
  auto add = [&](uint64_t job, ReadBudget budget) {
    if (auto r = cb_.reads(l.name, job, budget)) logs.push_back(job_reads_to_json(*r));
  };
  if (e.op == "tick") {
    if (!l.wants_reads) return;  // it never looked: its reads would be shipped for nothing
    // The jobs share one frame's bounds.
    const size_t n = std::max<size_t>(1, l.jobs.size());
    for (const auto& [job, config] : l.jobs) add(job, ReadBudget{kMaxReadsPerEvent / n, kMaxReadPathBytes / n});
  } else if (e.op == "attach" || e.op == "phase" || e.op == "pressure") {
    add(e.job, ReadBudget{0, kMaxReadPathBytes});  // the plan only: reads go with ticks
  }
  if (!logs.empty()) e.args["reads"] = std::move(logs);
}

json PolicyHosts::figures_json(uint64_t job) const {
  auto f = cb_.figures(job);
  return figures_to_json(f ? *f : empty_figures(job));
}

json PolicyHosts::status() const {
  json out = json::array();
  const uint64_t t = now();
  for (const auto& [name, l] : loaded_) {
    json applied = json::object(), refused = json::object(), jobs = json::array();
    for (int k = 0; k < kActionKindCount; ++k) {
      applied[action_kind_name(static_cast<ActionKind>(k))] = l.applied[k];
      refused[action_kind_name(static_cast<ActionKind>(k))] = l.refused[k];
    }
    for (const auto& [job, config] : l.jobs) jobs.push_back(job);
    json s{{"name", name},
           {"path", l.path},
           {"state", state_name(static_cast<int>(l.state))},
           {"pid", l.host ? json(l.host->pid()) : json(nullptr)},
           {"host_resident_bytes", l.host ? resident_bytes(l.host->pid()) : json(nullptr)},
           {"description", l.info.description},
           {"jobs", std::move(jobs)},
           {"pinned", l.pinned},
           {"failures", l.failures},
           {"restarts", l.restarts},
           {"last_failure", l.last_failure.empty() ? json(nullptr) : json(l.last_failure)},
           {"actions_applied", std::move(applied)},
           {"actions_refused", std::move(refused)},
           {"actions_dropped", l.dropped_actions},
           {"ticks", l.ticks},
           {"tick_seconds", {{"last", l.tick_seconds_last},
                             {"max", l.tick_seconds_max},
                             {"mean", l.ticks ? l.tick_seconds_sum / static_cast<double>(l.ticks) : 0.0}}}};
    if (l.state == State::kFailed) s["restart_in_seconds"] = l.restart_at_ns > t ? (l.restart_at_ns - t) / 1e9 : 0.0;
    out.push_back(std::move(s));
  }
  return out;
}

json PolicyHosts::overview() const {
  json available = json::array(), skipped = json::array();
  json out{{"dir", o_.policy_dir}};
  if (auto cat = catalog()) {
    for (const auto& p : cat->policies) available.push_back(json{{"name", p.name}, {"path", p.path}});
    for (const auto& s : cat->skipped) skipped.push_back(json{{"path", s.path}, {"why", s.why}});
  } else {
    out["error"] = cat.error().describe();
  }
  out["available"] = std::move(available);
  out["skipped"] = std::move(skipped);
  out["loaded"] = status();
  return out;
}

std::vector<int> PolicyHosts::fds() const {
  std::vector<int> out;
  for (const auto& [name, l] : loaded_) {
    if (l.host) out.push_back(l.host->fd());
  }
  return out;
}

}  // namespace mlos::policy
