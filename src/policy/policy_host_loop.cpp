// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_host_loop.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "core/json_fields.h"
#include "core/utf8.h"
#include "os/unix_socket.h"
#include "protocol/daemon_client.h"

namespace mlos::policy {

using nlohmann::json;

namespace {

PolicyHostLoop* self(void* ctx) { return static_cast<PolicyHostLoop*>(ctx); }

constexpr size_t kErrorSize = 512;

}  // namespace

PolicyHostLoop::PolicyHostLoop(const mlos_policy_t* policy, int fd) : policy_(policy), fd_(fd) {
  host_.struct_size = sizeof host_;
  host_.ctx = this;
  host_.job_figures = &job_figures;
  host_.set_cpu_weight = &set_cpu_weight;
  host_.set_io_weight = &set_io_weight;
  host_.set_memory_high = &set_memory_high;
  host_.set_memory_low = &set_memory_low;
  host_.advise_threads = &advise_threads;
  host_.advise_file = &advise_file;
  host_.log = &log;
  host_.read_log = &read_log;
  host_.read_plan = &read_plan;
  host_.advise_file_range = &advise_file_range;
  host_.request_policy = &request_policy;
  host_.release_policy = &release_policy;
  host_.recommend_placement = &recommend_placement;
  host_.report = &report;
}

int PolicyHostLoop::run() {
  protocol::FrameDecoder decoder{kMaxHostPayload};
  char buf[16384];
  for (;;) {
    auto frame = decoder.next();
    if (!frame) return 1;
    if (frame->has_value()) {
      auto request = protocol::parse_request(**frame);
      if (!request) return 1;
      const bool stop = request->op == "stop";
      auto bytes = protocol::encode_frame(protocol::FrameKind::kReply, handle(*request), kMaxHostPayload);
      if (!bytes) {
        bytes = protocol::encode_frame(protocol::FrameKind::kReply,
                                     protocol::error_reply(request->id, make_error(MLOS_ERR_BUFFER_TOO_SMALL,
                                                                                 "the policy's reply is too large")));
      }
      if (!os::send_all(fd_, *bytes).ok()) return 1;
      if (stop) return 0;
      continue;
    }
    auto n = os::recv_some(fd_, buf, sizeof buf, nullptr);
    if (!n) return 1;
    if (*n == 0) {  // the daemon went away: let the policy clean up
      if (initialised_ && policy_->fini != nullptr) policy_->fini(state_);
      return 0;
    }
    decoder.feed(std::string_view(buf, *n));
  }
}

json PolicyHostLoop::handle(const protocol::Request& req) {
  actions_ = json::array();
  dropped_actions_ = 0;
  logs_ = json::array();
  action_path_bytes_ = 0;
  reads_used_ = false;
  reads_.clear();
  json reply{{"id", req.id}, {"ok", true}};
  try {
    const json& args = req.args;
    remember_reads(args);
    char error[kErrorSize] = {0};
    if (req.op == "init") {
      if (initialised_) throw std::invalid_argument("already initialised");
      const std::string config = args.value("config", json::object()).dump();
      const int rc = policy_->init(&host_, config.c_str(), &state_, error, sizeof error);
      if (rc != MLOS_OK) {
        return protocol::error_reply(req.id, make_error(rc, error[0] ? std::string(error, strnlen(error, sizeof error))
                                                                   : "init refused its config"));
      }
      initialised_ = true;
      reply["info"] = describe_json();
    } else if (!initialised_) {
      throw std::invalid_argument("'" + req.op + "' before init");
    } else if (req.op == "attach") {
      const uint64_t job = non_negative_field(args, "job");
      remember(args.at("figures"));
      if (policy_->job_attached != nullptr) {
        const std::string config = args.value("config", json::object()).dump();
        const int rc = policy_->job_attached(state_, job, config.c_str(), error, sizeof error);
        if (rc != MLOS_OK) {
          jobs_.erase(job);
          return protocol::error_reply(req.id, make_error(rc, error[0] ? std::string(error, strnlen(error, sizeof error))
                                                                     : "the policy refused the job's config"));
        }
      }
    } else if (req.op == "detach") {
      const uint64_t job = non_negative_field(args, "job");
      if (jobs_.count(job) && policy_->job_detached != nullptr) policy_->job_detached(state_, job);
      jobs_.erase(job);
    } else if (req.op == "phase") {
      remember(args.at("figures"));
      const uint64_t job = non_negative_field(args, "job");
      if (policy_->phase_changed != nullptr) {
        policy_->phase_changed(state_, job, int_in_range(args.at("old"), "old", 0, MLOS_TRAINING_PHASE_COUNT - 1),
                               int_in_range(args.at("new"), "new", 0, MLOS_TRAINING_PHASE_COUNT - 1));
      }
    } else if (req.op == "pressure") {
      remember(args.at("figures"));
      if (policy_->memory_pressure_changed != nullptr) {
        policy_->memory_pressure_changed(state_, non_negative_field(args, "job"),
                                         int_in_range(args.at("level"), "level", 0, 2));
      }
    } else if (req.op == "figures") {
      // Part of a tick's figures (PolicyHosts::enqueue_tick): recorded
      // for the tick that follows; no policy code runs.
      const json& jobs = args.at("jobs");
      if (!jobs.is_array()) throw std::invalid_argument("'jobs' must be an array");
      for (const json& f : jobs) remember(f);
    } else if (req.op == "tick") {
      const json& jobs = args.at("jobs");
      if (!jobs.is_array()) throw std::invalid_argument("'jobs' must be an array");
      for (const json& f : jobs) remember(f);
      const json& now = args.at("now");
      if (!now.is_number()) throw std::invalid_argument("'now' must be a number");
      if (policy_->tick != nullptr) policy_->tick(state_, now.get<double>());
    } else if (req.op == "stop") {
      if (policy_->fini != nullptr) policy_->fini(state_);
      initialised_ = false;
    } else {
      throw std::invalid_argument("unknown op '" + req.op + "'");
    }
  } catch (const std::exception& e) {
    reads_.clear();
    return protocol::error_reply(req.id, make_error(MLOS_ERR_INVALID_ARGUMENT, req.op + ": " + e.what()));
  }
  reads_.clear();  // the strings the policy saw die with the event
  if (!actions_.empty()) reply["actions"] = std::move(actions_);
  if (dropped_actions_ != 0) reply["dropped_actions"] = dropped_actions_;
  if (!logs_.empty()) reply["logs"] = std::move(logs_);
  if (reads_used_) reply["reads_used"] = true;
  return reply;
}

json PolicyHostLoop::describe_json() const { return describe(*policy_).to_json(); }

void PolicyHostLoop::remember(const json& figures) {
  auto f = figures_from_json(figures);
  if (!f) throw std::invalid_argument(f.error().message);
  jobs_[f->job] = *f;
}

void PolicyHostLoop::remember_reads(const json& args) {
  if (!args.is_object() || !args.contains("reads")) return;
  const json& all = args["reads"];
  if (!all.is_array()) throw std::invalid_argument("'reads' must be an array");
  for (const json& one : all) {
    auto r = job_reads_from_json(one);
    if (!r) throw std::invalid_argument(r.error().message);
    auto [it, fresh] = reads_.try_emplace(r->job);
    if (!fresh) throw std::invalid_argument("job " + std::to_string(r->job) + " has two read logs");
    EventReads& e = it->second;
    e.log = std::move(*r);
    for (const std::string& p : e.log.plan.paths) e.plan_paths.push_back(p.c_str());
  }
}

int PolicyHostLoop::queue(Action a) {
  if (!jobs_.count(a.job)) return MLOS_ERR_NOT_FOUND;
  const size_t bytes = json_string_bytes(a.path) + json_string_bytes(a.payload);
  if (actions_.size() >= kMaxActionsPerReply || action_path_bytes_ + bytes > kMaxActionPathBytes) {
    ++dropped_actions_;
    return MLOS_ERR_QUOTA;
  }
  action_path_bytes_ += bytes;
  actions_.push_back(action_to_json(a));
  return MLOS_OK;
}

namespace {

// A policy's text argument: NUL-terminated within `max` bytes, UTF-8 (it
// goes into JSON).
bool bounded_text(const char* s, size_t max) { return s != nullptr && strnlen(s, max + 1) <= max; }

bool json_object_text(const char* s) {
  if (!bounded_text(s, MLOS_POLICY_PAYLOAD_MAX)) return false;
  return json::parse(s, nullptr, false).is_object();
}

}  // namespace

int PolicyHostLoop::request_policy(void* ctx, uint64_t job, const char* name, const char* config_json) {
  if (config_json == nullptr) config_json = "{}";
  if (!bounded_text(name, 63) || !valid_policy_name(name) || !json_object_text(config_json)) {
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  return self(ctx)->queue(Action{job, ActionKind::kRequestPolicy, 0, {}, 0, 0, name, config_json});
}

int PolicyHostLoop::release_policy(void* ctx, uint64_t job, const char* name) {
  if (!bounded_text(name, 63) || !valid_policy_name(name)) return MLOS_ERR_INVALID_ARGUMENT;
  return self(ctx)->queue(Action{job, ActionKind::kReleasePolicy, 0, {}, 0, 0, name, {}});
}

int PolicyHostLoop::recommend_placement(void* ctx, uint64_t job, int placement, const char* reason) {
  if (reason == nullptr) reason = "";
  if ((placement != MLOS_POLICY_PLACEMENT_SHARED && placement != MLOS_POLICY_PLACEMENT_EXCLUSIVE) ||
      !bounded_text(reason, MLOS_POLICY_PAYLOAD_MAX) || first_invalid_utf8(reason) != std::string_view::npos) {
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  return self(ctx)->queue(
      Action{job, ActionKind::kRecommendPlacement, static_cast<uint64_t>(placement), {}, 0, 0, {}, reason});
}

int PolicyHostLoop::report(void* ctx, uint64_t job, const char* json_object) {
  if (!json_object_text(json_object)) return MLOS_ERR_INVALID_ARGUMENT;
  return self(ctx)->queue(Action{job, ActionKind::kReport, 0, {}, 0, 0, {}, json_object});
}

int PolicyHostLoop::read_log(void* ctx, uint64_t job, mlos_policy_read_t* out, size_t max, size_t* count,
                             uint64_t* lost) {
  PolicyHostLoop* me = self(ctx);
  if (count == nullptr || (out == nullptr && max != 0)) return MLOS_ERR_INVALID_ARGUMENT;
  *count = 0;
  if (lost != nullptr) *lost = 0;
  if (!me->jobs_.count(job)) return MLOS_ERR_NOT_FOUND;
  auto it = me->reads_.find(job);
  if (it == me->reads_.end()) return MLOS_ERR_UNSUPPORTED;
  me->reads_used_ = true;
  EventReads& e = it->second;
  while (*count < max && e.taken < e.log.reads.size()) {
    const FileRead& r = e.log.reads[e.taken++];
    out[(*count)++] = mlos_policy_read_t{r.path.c_str(), r.offset, r.length};
  }
  if (lost != nullptr && !e.lost_told) {
    *lost = e.log.lost;
    e.lost_told = true;
  }
  return MLOS_OK;
}

int PolicyHostLoop::read_plan(void* ctx, uint64_t job, mlos_policy_plan_t* out) {
  PolicyHostLoop* me = self(ctx);
  if (out == nullptr || out->struct_size < MLOS_POLICY_PLAN_SIZE_V1) return MLOS_ERR_INVALID_ARGUMENT;
  if (!me->jobs_.count(job)) return MLOS_ERR_NOT_FOUND;
  auto it = me->reads_.find(job);
  if (it == me->reads_.end()) return MLOS_ERR_UNSUPPORTED;
  me->reads_used_ = true;
  const EventReads& e = it->second;
  mlos_policy_plan_t plan{};
  plan.generation = e.log.plan.generation;
  plan.position = e.log.plan.position;
  plan.total = e.log.plan.total;
  plan.count = e.plan_paths.size();
  plan.paths = e.plan_paths.data();
  plan.sizes = e.log.plan.sizes.data();
  // Only the prefix the policy's struct has (a policy built before a field
  // was added passes a smaller struct); struct_size says what was filled.
  const size_t size = out->struct_size < sizeof plan ? out->struct_size : sizeof plan;
  plan.struct_size = static_cast<uint32_t>(size);
  std::memcpy(static_cast<void*>(out), &plan, size);
  return MLOS_OK;
}

int PolicyHostLoop::advise_file_range(void* ctx, uint64_t job, const char* path, uint64_t offset, uint64_t length,
                                      int advice) {
  if (path == nullptr || path[0] == '\0' || strnlen(path, 4096) >= 4096 || advice < MLOS_POLICY_FILE_SEQUENTIAL ||
      advice > MLOS_POLICY_FILE_DONTNEED || offset > INT64_MAX || length > INT64_MAX) {
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  return self(ctx)->queue(job, ActionKind::kFileAdvice, static_cast<uint64_t>(advice), path, offset, length);
}

int PolicyHostLoop::job_figures(void* ctx, uint64_t job, mlos_policy_job_figures_t* out) {
  if (out == nullptr || out->struct_size < MLOS_POLICY_FIGURES_SIZE_V1) return MLOS_ERR_INVALID_ARGUMENT;
  auto it = self(ctx)->jobs_.find(job);
  if (it == self(ctx)->jobs_.end()) return MLOS_ERR_NOT_FOUND;
  // A policy built before a field was added passes a smaller struct: fill
  // only what it has.
  const size_t size = out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
  mlos_policy_job_figures_t f = it->second;
  f.struct_size = static_cast<uint32_t>(size);
  std::memcpy(static_cast<void*>(out), &f, size);
  return MLOS_OK;
}

int PolicyHostLoop::set_cpu_weight(void* ctx, uint64_t job, uint32_t weight) {
  if (weight < 1 || weight > 10000) return MLOS_ERR_INVALID_ARGUMENT;
  return self(ctx)->queue(job, ActionKind::kCpuWeight, weight);
}

int PolicyHostLoop::set_io_weight(void* ctx, uint64_t job, uint32_t weight) {
  if (weight < 1 || weight > 10000) return MLOS_ERR_INVALID_ARGUMENT;
  return self(ctx)->queue(job, ActionKind::kIoWeight, weight);
}

int PolicyHostLoop::set_memory_high(void* ctx, uint64_t job, uint64_t bytes) {
  return self(ctx)->queue(job, ActionKind::kMemoryHigh, bytes);
}

int PolicyHostLoop::set_memory_low(void* ctx, uint64_t job, uint64_t bytes) {
  return self(ctx)->queue(job, ActionKind::kMemoryLow, bytes);
}

int PolicyHostLoop::advise_threads(void* ctx, uint64_t job, int threads) {
  if (threads < 1) return MLOS_ERR_INVALID_ARGUMENT;
  return self(ctx)->queue(job, ActionKind::kThreads, static_cast<uint64_t>(threads));
}

int PolicyHostLoop::advise_file(void* ctx, uint64_t job, const char* path, int advice) {
  if (path == nullptr || path[0] == '\0' || strnlen(path, 4096) >= 4096 || advice < MLOS_POLICY_FILE_SEQUENTIAL ||
      advice > MLOS_POLICY_FILE_DONTNEED) {
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  return self(ctx)->queue(job, ActionKind::kFileAdvice, static_cast<uint64_t>(advice), path);
}

void PolicyHostLoop::log(void* ctx, int level, const char* message) {
  PolicyHostLoop* me = self(ctx);
  if (message == nullptr || me->logs_.size() >= kMaxLogsPerReply) return;
  if (level < MLOS_POLICY_LOG_ERROR || level > MLOS_POLICY_LOG_DEBUG) level = MLOS_POLICY_LOG_INFO;
  me->logs_.push_back(json{{"level", level}, {"message", std::string(message, strnlen(message, kMaxLogLength))}});
}

}  // namespace mlos::policy
