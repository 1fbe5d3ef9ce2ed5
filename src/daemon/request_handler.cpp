#include "daemon/request_handler.h"

#include <ctime>

#include "core/json_fields.h"
#include "daemon/daemon_client.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

uint64_t job_field(const json& args) {
  if (!args.contains("job") || !is_non_negative_integer(args["job"])) {
    throw std::invalid_argument("'job' must be a non-negative integer");
  }
  return args["job"].get<uint64_t>();
}

int int_arg(const json& args, const char* key) {
  if (!args.contains(key) || !args[key].is_number_integer() || args[key].get<int64_t>() < INT32_MIN ||
      args[key].get<int64_t>() > INT32_MAX) {
    throw std::invalid_argument(std::string("'") + key + "' must be a 32-bit integer");
  }
  return args[key].get<int>();
}

json done(uint64_t id, const Status& s) {
  return s ? json{{"id", id}, {"ok", true}} : error_reply(id, s.error());
}

}  // namespace

json handle_request(JobManager& jobs, const RequestContext& ctx, const os::PeerCredentials& peer, const Request& req,
                    os::UniqueFd fd) {
  try {
    json reply{{"id", req.id}, {"ok", true}};
    if (req.op == "hello") {
      if (req.args.contains("protocol") && req.args["protocol"] != kProtocolVersion) {
        return error_reply(req.id, make_error(MLOS_ERR_VERSION_MISMATCH,
                                              "mlosd speaks protocol " + std::to_string(kProtocolVersion) +
                                                  ", the client " + req.args["protocol"].dump()));
      }
      reply["daemon"] = ctx.info;
      reply["protocol"] = kProtocolVersion;
      reply["you"] = {{"pid", peer.pid}, {"uid", peer.uid}, {"gid", peer.gid}};
      return reply;
    }
    if (req.op == "status") {
      reply.update(jobs.status());
      reply["daemon"] = ctx.info;
      reply["daemon"]["uptime_seconds"] = static_cast<int64_t>(time(nullptr)) - ctx.info.value("started_unix", int64_t{0});
      reply["daemon"]["clients"] = ctx.clients;
      return reply;
    }
    if (req.op == "metrics") {
      if (!ctx.metrics_text) return error_reply(req.id, make_error(MLOS_ERR_UNSUPPORTED, "no metrics here"));
      reply["text"] = ctx.metrics_text();
      return reply;
    }
    if (req.op == "request") {
      auto granted = jobs.request(peer, req.args, std::move(fd));
      if (!granted) return error_reply(req.id, granted.error());
      reply.update(*granted);
      return reply;
    }
    if (req.op == "watch_memory") {
      auto watched = jobs.watch_memory(peer, req.args, std::move(fd));
      if (!watched) return error_reply(req.id, watched.error());
      reply.update(*watched);
      return reply;
    }
    if (req.op == "memory_status") {
      auto status = jobs.memory_status(peer, job_field(req.args));
      if (!status) return error_reply(req.id, status.error());
      reply.update(*status);
      return reply;
    }
    if (req.op == "release") return done(req.id, jobs.release(peer, job_field(req.args)));
    if (req.op == "phase") return done(req.id, jobs.set_phase(peer, job_field(req.args), int_arg(req.args, "phase")));
    if (req.op == "attach") return done(req.id, jobs.attach(peer, job_field(req.args), int_arg(req.args, "pid")));
    return error_reply(req.id, make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown op '" + req.op + "'"));
  } catch (const std::exception& e) {
    return error_reply(req.id, make_error(MLOS_ERR_INVALID_ARGUMENT, req.op + ": " + e.what()));
  }
}

}  // namespace mlos::daemon
