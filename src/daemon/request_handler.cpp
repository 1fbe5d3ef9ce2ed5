// SPDX-License-Identifier: Apache-2.0
#include "daemon/request_handler.h"

#include <ctime>
#include <map>

#include "core/json_fields.h"
#include "protocol/daemon_client.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

constexpr uint64_t kDefaultStatusPage = 256, kMaxStatusPage = 512;

uint64_t job_field(const json& args) {
  if (!args.contains("job") || !is_non_negative_integer(args["job"])) {
    throw std::invalid_argument("'job' must be a non-negative integer");
  }
  return args["job"].get<uint64_t>();
}

int int_arg(const json& args, const char* key) {
  if (!args.contains(key)) throw std::invalid_argument(std::string("'") + key + "' must be a 32-bit integer");
  return int_in_range(args[key], std::string("'") + key + "'", INT32_MIN, INT32_MAX);
}

std::string string_arg(const json& args, const char* key) {
  if (!args.contains(key) || !args[key].is_string() || args[key].get<std::string>().empty()) {
    throw std::invalid_argument(std::string("'") + key + "' must be a non-empty string");
  }
  return args[key].get<std::string>();
}

// A job's GPU limits and what its processes did under them (its share file).
json share_json(const gpushare::ShareFileView& v) {
  json devices = json::array();
  for (const auto& d : v.devices) devices.push_back({{"uuid", d.uuid}, {"used_bytes", d.used}});
  return {{"memory_limit_bytes", v.limits.memory_limit == 0 ? json(nullptr) : json(v.limits.memory_limit)},
          {"share_percent", v.limits.share_percent == 0 ? json(nullptr) : json(v.limits.share_percent)},
          {"mechanism", v.mechanism},
          {"utilization_source", v.utilization_source},
          {"devices", devices},
          {"processes", v.processes},
          {"allocations_refused", v.refused},
          {"launches", v.launches},
          {"throttled_seconds", static_cast<double>(v.throttled_ns) * 1e-9}};
}

// Each job's GPU figures as "gpu": {...} (null figures unknown), for jobs
// that hold GPUs or whose processes use one.
void add_gpu_figures(json& reply, const std::map<uint64_t, JobGpuFigures>& figures) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  for (auto& job : reply["jobs"]) {
    auto f = figures.find(job.value("job", uint64_t{0}));
    if (f == figures.end()) continue;
    const JobGpuFigures& g = f->second;
    if (!g.memory_bytes && job.value("gpus", json::array()).empty()) continue;
    // The stall's figures exist once its GPUs' utilization was known.
    const bool sampled = g.sampled_seconds > 0;
    job["gpu"] = {{"memory_bytes", opt(g.memory_bytes)},
                  {"utilization_percent", opt(g.utilization_percent)},
                  {"data_loading_seconds", sampled ? json(g.data_loading_seconds) : json(nullptr)},
                  {"data_stall_seconds", sampled ? json(g.data_stall_seconds) : json(nullptr)},
                  {"sampled_seconds", g.sampled_seconds},
                  {"data_stall_share", sampled ? json(g.data_stall_seconds / g.sampled_seconds) : json(nullptr)}};
    if (g.share) job["gpu"]["share"] = share_json(*g.share);
    if (!g.share_note.empty()) job["gpu"]["share_note"] = g.share_note;
  }
}

// Who holds what, per uid, next to the quotas that bound it (root is
// exempt: its quota fields are null).
json users_json(const JobManager& jobs, const RequestContext& ctx) {
  std::map<uint32_t, UserHoldings> by_uid = jobs.holdings();
  if (ctx.connections_by_uid != nullptr) {
    for (const auto& [uid, n] : *ctx.connections_by_uid) by_uid[uid].connections = n;
  }
  const UserQuotas& q = jobs.quotas();
  json quota{{"connections", q.connections_per_uid},
             {"jobs", q.jobs_per_uid},
             {"exclusive_cpus", q.exclusive_cpu_bound(jobs.node_cpus())},
             {"memory_bytes", q.memory_bytes_per_uid == 0 ? json(nullptr) : json(q.memory_bytes_per_uid)},
             {"exclusive_gpus", q.exclusive_gpu_bound(jobs.node_gpus())}};
  json out = json::array();
  for (const auto& [uid, held] : by_uid) {
    json u = held.to_json();
    u["uid"] = uid;
    u["quota"] = uid == 0 ? json(nullptr) : quota;
    out.push_back(std::move(u));
  }
  return out;
}

// One request being answered.
struct Call {
  JobManager& jobs;
  const RequestContext& ctx;
  const os::PeerCredentials& peer;
  const protocol::Request& req;
  os::UniqueFd fd;
  json reply;
};

// The reply with `answer` merged in, or its error.
json merged(Call& c, const Result<json>& answer) {
  if (!answer) return protocol::error_reply(c.req.id, answer.error());
  c.reply.update(*answer);
  return std::move(c.reply);
}

json done(const Call& c, const Status& s) {
  return s ? json{{"id", c.req.id}, {"ok", true}} : protocol::error_reply(c.req.id, s.error());
}

json hello(Call& c) {
  const json& args = c.req.args;
  if (args.contains("protocol") && args["protocol"] != protocol::kProtocolVersion) {
    return protocol::error_reply(c.req.id, make_error(MLOS_ERR_VERSION_MISMATCH,
                                                      "mlosd speaks protocol " +
                                                          std::to_string(protocol::kProtocolVersion) +
                                                          ", the client " + args["protocol"].dump()));
  }
  c.reply["daemon"] = c.ctx.info;
  c.reply["protocol"] = protocol::kProtocolVersion;
  c.reply["you"] = {{"pid", c.peer.pid}, {"uid", c.peer.uid}, {"gid", c.peer.gid}};
  return std::move(c.reply);
}

json status(Call& c) {
  // Paged, so a reply stays far below the frame limit at any number of
  // jobs (about 1 KiB a job): clients follow "next_after".
  const json& args = c.req.args;
  uint64_t after = 0, limit = kDefaultStatusPage;
  if (args.contains("after")) after = non_negative_field(args, "after");
  if (args.contains("limit")) limit = non_negative_field(args, "limit");
  if (limit == 0 || limit > kMaxStatusPage) {
    throw std::invalid_argument("'limit' must be 1.." + std::to_string(kMaxStatusPage));
  }
  json& reply = c.reply;
  reply.update(c.jobs.status(after, static_cast<size_t>(limit)));
  reply["daemon"] = c.ctx.info;
  reply["daemon"]["uptime_seconds"] =
      static_cast<int64_t>(time(nullptr)) - c.ctx.info.value("started_unix", int64_t{0});
  reply["daemon"]["clients"] = c.ctx.clients;
  reply["users"] = users_json(c.jobs, c.ctx);
  if (c.ctx.gpu_figures) add_gpu_figures(reply, c.ctx.gpu_figures());
  return std::move(reply);
}

json metrics(Call& c) {
  if (!c.ctx.metrics_text) return protocol::error_reply(c.req.id, make_error(MLOS_ERR_UNSUPPORTED, "no metrics here"));
  std::string text = c.ctx.metrics_text();
  // The HTTP endpoint has no such bound: it is where a large node is
  // scraped from.
  if (text.size() > protocol::kDefaultMaxPayload - 4096) {
    return protocol::error_reply(c.req.id, make_error(MLOS_ERR_BUFFER_TOO_SMALL,
                                                      "the metrics text is " + std::to_string(text.size()) +
                                                          " bytes, more than one reply frame holds; scrape the "
                                                          "HTTP endpoint (metrics_listen) instead"));
  }
  c.reply["text"] = std::move(text);
  return std::move(c.reply);
}

// Every op of the protocol (docs/protocol.md), by name.
using Op = json (*)(Call&);
const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> table = {
      {"hello", hello},
      {"status", status},
      {"metrics", metrics},
      {"request", [](Call& c) { return merged(c, c.jobs.request(c.peer, c.req.args, std::move(c.fd))); }},
      {"watch_memory", [](Call& c) { return merged(c, c.jobs.watch_memory(c.peer, c.req.args, std::move(c.fd))); }},
      {"memory_status", [](Call& c) { return merged(c, c.jobs.memory_status(c.peer, job_field(c.req.args))); }},
      {"policy_request",
       [](Call& c) {
         const json config = c.req.args.value("config", json::object());
         return merged(c, c.jobs.request_policy(c.peer, job_field(c.req.args), string_arg(c.req.args, "name"), config));
       }},
      {"policy_release",
       [](Call& c) {
         return done(c, c.jobs.release_policy(c.peer, job_field(c.req.args), string_arg(c.req.args, "name")));
       }},
      {"advice", [](Call& c) { return merged(c, c.jobs.advice(job_field(c.req.args))); }},
      {"policies", [](Call& c) { return merged(c, c.jobs.policies_status()); }},
      {"policy_load", [](Call& c) { return merged(c, c.jobs.load_policy(c.peer, string_arg(c.req.args, "name"))); }},
      {"policy_unload", [](Call& c) { return done(c, c.jobs.unload_policy(c.peer, string_arg(c.req.args, "name"))); }},
      {"release", [](Call& c) { return done(c, c.jobs.release(c.peer, job_field(c.req.args))); }},
      {"phase",
       [](Call& c) { return done(c, c.jobs.set_phase(c.peer, job_field(c.req.args), int_arg(c.req.args, "phase"))); }},
      {"attach",
       [](Call& c) { return done(c, c.jobs.attach(c.peer, job_field(c.req.args), int_arg(c.req.args, "pid"))); }},
  };
  return table;
}

}  // namespace

json handle_request(JobManager& jobs, const RequestContext& ctx, const os::PeerCredentials& peer, const protocol::Request& req,
                    os::UniqueFd fd) {
  try {
    auto op = ops().find(req.op);
    if (op == ops().end()) {
      return protocol::error_reply(req.id, make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown op '" + req.op + "'"));
    }
    Call call{jobs, ctx, peer, req, std::move(fd), json{{"id", req.id}, {"ok", true}}};
    return op->second(call);
  } catch (const std::exception& e) {
    return protocol::error_reply(req.id, make_error(MLOS_ERR_INVALID_ARGUMENT, req.op + ": " + e.what()));
  }
}

}  // namespace mlos::daemon
