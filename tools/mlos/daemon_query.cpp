#include "daemon_query.h"

#include "mlos/errors.h"

namespace mlos::cli {

namespace {

// The error for "nothing answers", with the way out appended.
Error unavailable(const Error& e) {
  Error out = e;
  out.message = e.describe() + "; start mlosd (`mlos daemon`), or name its socket with --socket or MLOS_DAEMON_SOCKET";
  out.sys_errno = 0;  // already in the message, before the hint
  return out;
}

Result<daemon::DaemonClient> connect(const std::string& socket) {
  auto client = daemon::DaemonClient::connect(socket);
  if (!client && client.error().code == MLOS_ERR_DAEMON_UNAVAILABLE) return unavailable(client.error());
  return client;
}

}  // namespace

std::string resolve_socket(const std::string& requested) {
  return requested.empty() ? daemon::default_socket_path() : requested;
}

Result<nlohmann::json> query_daemon_status(const std::string& socket) {
  auto client = connect(socket);
  if (!client) return client.error();
  return client->call("status");
}

Result<nlohmann::json> DaemonStatusSource::fetch_once() {
  if (!client_) {
    auto c = connect(socket_);
    if (!c) return c.error();
    client_.emplace(std::move(*c));
  }
  auto reply = client_->call("status");
  if (!reply && reply.error().code == MLOS_ERR_DAEMON_UNAVAILABLE) {
    client_.reset();
    return unavailable(reply.error());
  }
  return reply;
}

Result<nlohmann::json> DaemonStatusSource::fetch() {
  const bool reused = client_.has_value();
  auto reply = fetch_once();
  // A kept connection may have broken since (mlosd restarted): one fresh try.
  if (!reply && reply.error().code == MLOS_ERR_DAEMON_UNAVAILABLE && reused) reply = fetch_once();
  return reply;
}

}  // namespace mlos::cli
