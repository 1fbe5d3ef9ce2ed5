// SPDX-License-Identifier: Apache-2.0
#include "protocol/daemon_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdlib>

#include "os/environment.h"
#include "os/unix_socket.h"
#include "protocol/frame_codec.h"

namespace mlos::protocol {

using nlohmann::json;

std::string default_socket_path() {
  const char* env = os::env("MLOS_DAEMON_SOCKET");
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

namespace {

// Something to read, or the daemon's end closed, before a request is sent.
bool input_pending(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace

bool nobody_listens(const Error& e) {
  return e.code == MLOS_ERR_DAEMON_UNAVAILABLE && (e.sys_errno == ENOENT || e.sys_errno == ECONNREFUSED);
}

Result<DaemonClient> DaemonClient::connect(const std::string& path, int timeout_ms) {
  auto fd = os::connect_unix(path, timeout_ms);
  if (!fd) {
    const int err = fd.error().sys_errno;
    const std::string why = err == EAGAIN ? "mlosd at " + path + " is saturated (its backlog stayed full)"
                                          : "no mlosd answers at " + path;
    return make_sys_error(err, why + " (" + fd.error().message + ")", MLOS_ERR_DAEMON_UNAVAILABLE);
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
  // In version 1 mlosd sends nothing unsolicited: input before a request is
  // its refusal of the connection (one error reply, e.g. a quota) or its
  // close (idle timeout, restart). Either is found before anything is
  // written, so the caller knows the request was not sent.
  if (input_pending(fd_.get())) {
    auto refused = refusal();
    fd_.reset();
    return refused ? *refused : make_error(MLOS_ERR_DAEMON_UNAVAILABLE, "mlosd at " + path_ + " closed the connection");
  }
  const uint64_t id = next_id_++;
  args["op"] = op;
  args["id"] = id;
  auto bytes = encode_frame(FrameKind::kRequest, args, kMaxRequestPayload);
  if (!bytes) return make_error(bytes.error().code, "request '" + op + "' not sent: " + bytes.error().message);
  auto broken = [&](const Error& e) -> Error {
    fd_.reset();
    return make_sys_error(e.sys_errno, "mlosd at " + path_ + ": " + e.message, MLOS_ERR_DAEMON_UNAVAILABLE);
  };
  if (Status s = os::send_all(fd_.get(), *bytes, pass_fd); !s) {
    // A daemon that refused the connection closed it after its one error
    // reply, which may still wait to be read: that reason, not EPIPE.
    if (auto refused = refusal()) {
      fd_.reset();
      return *refused;
    }
    return broken(s.error());
  }
  if (sent != nullptr) *sent = true;
  FrameDecoder decoder{kMaxReplyPayload};
  auto reply = read_frame(decoder);
  if (!reply) {
    if (reply.error().code == MLOS_ERR_TIMEOUT) {
      fd_.reset();
      return make_error(MLOS_ERR_TIMEOUT, "mlosd at " + path_ + " did not reply to '" + op + "' in time");
    }
    return broken(reply.error());
  }
  if (!reply->has_value()) return broken(make_error(MLOS_ERR_SYSTEM, "connection closed by mlosd"));
  if (!(*reply)->contains("id") || (**reply)["id"] != id) {
    // Id 0 with an error: the daemon refused the connection itself (sent
    // at accept, which may come after our request was written).
    if ((**reply)["id"] == 0 && (*reply)->value("ok", true) == false) {
      fd_.reset();
      return error_from_reply(**reply);
    }
    return broken(make_error(MLOS_ERR_SYSTEM, "reply out of order"));
  }
  if ((*reply)->value("ok", false) != true) return error_from_reply(**reply);
  return std::move(**reply);
}

std::optional<Error> DaemonClient::refusal() {
  if (!input_pending(fd_.get())) return std::nullopt;
  FrameDecoder decoder{kMaxReplyPayload};
  auto early = read_frame(decoder);
  if (early && early->has_value() && (*early)->value("ok", true) == false) return error_from_reply(**early);
  return std::nullopt;
}

Result<std::optional<json>> DaemonClient::read_frame(FrameDecoder& decoder) {
  char buf[16384];
  for (;;) {
    auto frame = decoder.next();
    if (!frame) return frame.error();
    if (frame->has_value()) {
      if ((*frame)->kind != FrameKind::kReply) continue;  // events are not for this call
      return std::optional<json>(std::move((*frame)->payload));
    }
    auto n = os::recv_some(fd_.get(), buf, sizeof buf, nullptr);
    if (!n) {
      const int err = n.error().sys_errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return make_error(MLOS_ERR_TIMEOUT, "no reply in time");
      return n.error();
    }
    if (*n == 0) return std::optional<json>();
    decoder.feed(std::string_view(buf, *n));
  }
}

}  // namespace mlos::protocol
