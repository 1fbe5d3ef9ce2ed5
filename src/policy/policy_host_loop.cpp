// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_host_loop.h"

#include <cstring>
#include <stdexcept>

#include "core/json_fields.h"
#include "daemon/daemon_client.h"
#include "os/unix_socket.h"

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
}

int PolicyHostLoop::run() {
  daemon::FrameDecoder decoder{kMaxHostPayload};
  char buf[16384];
  for (;;) {
    auto frame = decoder.next();
    if (!frame) return 1;
    if (frame->has_value()) {
      auto request = daemon::parse_request(**frame);
      if (!request) return 1;
      const bool stop = request->op == "stop";
      auto bytes = daemon::encode_frame(daemon::FrameKind::kReply, handle(*request), kMaxHostPayload);
      if (!bytes) {
        bytes = daemon::encode_frame(daemon::FrameKind::kReply,
                                     daemon::error_reply(request->id, make_error(MLOS_ERR_BUFFER_TOO_SMALL,
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

json PolicyHostLoop::handle(const daemon::Request& req) {
  actions_ = json::array();
  dropped_actions_ = 0;
  logs_ = json::array();
  json reply{{"id", req.id}, {"ok", true}};
  try {
    const json& args = req.args;
    char error[kErrorSize] = {0};
    if (req.op == "init") {
      if (initialised_) throw std::invalid_argument("already initialised");
      const std::string config = args.value("config", json::object()).dump();
      const int rc = policy_->init(&host_, config.c_str(), &state_, error, sizeof error);
      if (rc != MLOS_OK) {
        return daemon::error_reply(req.id, make_error(rc, error[0] ? std::string(error, strnlen(error, sizeof error))
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
          return daemon::error_reply(req.id, make_error(rc, error[0] ? std::string(error, strnlen(error, sizeof error))
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
    return daemon::error_reply(req.id, make_error(MLOS_ERR_INVALID_ARGUMENT, req.op + ": " + e.what()));
  }
  if (!actions_.empty()) reply["actions"] = std::move(actions_);
  if (dropped_actions_ != 0) reply["dropped_actions"] = dropped_actions_;
  if (!logs_.empty()) reply["logs"] = std::move(logs_);
  return reply;
}

json PolicyHostLoop::describe_json() const { return describe(*policy_).to_json(); }

void PolicyHostLoop::remember(const json& figures) {
  auto f = figures_from_json(figures);
  if (!f) throw std::invalid_argument(f.error().message);
  jobs_[f->job] = *f;
}

int PolicyHostLoop::queue(uint64_t job, ActionKind kind, uint64_t value, std::string path) {
  if (!jobs_.count(job)) return MLOS_ERR_NOT_FOUND;
  if (actions_.size() >= kMaxActionsPerReply) {
    ++dropped_actions_;
    return MLOS_ERR_QUOTA;
  }
  actions_.push_back(action_to_json(Action{job, kind, value, std::move(path)}));
  return MLOS_OK;
}

int PolicyHostLoop::job_figures(void* ctx, uint64_t job, mlos_policy_job_figures_t* out) {
  if (out == nullptr || out->struct_size < sizeof(mlos_policy_job_figures_t)) return MLOS_ERR_INVALID_ARGUMENT;
  auto it = self(ctx)->jobs_.find(job);
  if (it == self(ctx)->jobs_.end()) return MLOS_ERR_NOT_FOUND;
  const uint32_t size = out->struct_size;
  *out = it->second;
  out->struct_size = size < sizeof *out ? size : sizeof *out;
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
