#include "daemon/daemon_client.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdlib>

#include "daemon/frame_codec.h"
#include "os/unix_socket.h"

namespace mlos::daemon {

using nlohmann::json;

std::string default_socket_path() {
  const char* env = std::getenv("MLOS_DAEMON_SOCKET");
  return env != nullptr && *env ? env : "/run/mlos/mlosd.sock";
}

json error_reply(uint64_t id, const Error& error) {
  return json{{"id", id},
              {"ok", false},
              {"error", {{"code", error.code}, {"name", mlos_strerror(error.code)}, {"message", error.describe()}}}};
}

Error error_from_reply(const json& reply) {
  const json& e = reply.contains("error") && reply["error"].is_object() ? reply["error"] : json::object();
  int code = MLOS_ERR_SYSTEM;
  if (e.contains("code") && e["code"].is_number_integer()) code = e["code"].get<int>();
  std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                          : "mlosd refused the request";
  return make_error(code, "mlosd: " + message);
}

Result<DaemonClient> DaemonClient::connect(const std::string& path, int timeout_ms) {
  auto fd = os::connect_unix(path);
  if (!fd) {
    return make_sys_error(fd.error().sys_errno, "no mlosd answers at " + path + " (" + fd.error().message + ")",
                          MLOS_ERR_DAEMON_UNAVAILABLE);
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd->get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  DaemonClient c(std::move(fd.value()), path);
  auto hello = c.call("hello", json{{"protocol", kProtocolVersion}});
  if (!hello) return hello.error();
  c.hello_ = std::move(*hello);
  return c;
}

Result<json> DaemonClient::call(const std::string& op, json args, int pass_fd, bool* sent) {
  if (sent != nullptr) *sent = false;
  if (!fd_.valid()) return make_error(MLOS_ERR_DAEMON_UNAVAILABLE, "connection to mlosd is closed");
  const uint64_t id = next_id_++;
  args["op"] = op;
  args["id"] = id;
  auto bytes = encode_frame(FrameKind::kRequest, args, kMaxRequestPayload);
  if (!bytes) return make_error(bytes.error().code, "request '" + op + "' not sent: " + bytes.error().message);
  auto broken = [&](const Error& e) -> Error {
    fd_.reset();
    return make_sys_error(e.sys_errno, "mlosd at " + path_ + ": " + e.message, MLOS_ERR_DAEMON_UNAVAILABLE);
  };
  if (Status s = os::send_all(fd_.get(), *bytes, pass_fd); !s) return broken(s.error());
  if (sent != nullptr) *sent = true;
  FrameDecoder decoder{kMaxReplyPayload};
  char buf[16384];
  for (;;) {
    auto frame = decoder.next();
    if (!frame) return broken(frame.error());
    if (frame->has_value()) {
      const json& reply = (*frame)->payload;
      if ((*frame)->kind != FrameKind::kReply) continue;  // events are not for this call
      if (!reply.contains("id") || reply["id"] != id) return broken(make_error(MLOS_ERR_SYSTEM, "reply out of order"));
      if (reply.value("ok", false) != true) return error_from_reply(reply);
      return reply;
    }
    auto n = os::recv_some(fd_.get(), buf, sizeof buf, nullptr);
    if (!n) {
      const int err = n.error().sys_errno;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        fd_.reset();
        return make_error(MLOS_ERR_TIMEOUT, "mlosd at " + path_ + " did not reply to '" + op + "' in time");
      }
      return broken(n.error());
    }
    if (*n == 0) return broken(make_error(MLOS_ERR_SYSTEM, "connection closed by mlosd"));
    decoder.feed(std::string_view(buf, *n));
  }
}

}  // namespace mlos::daemon
