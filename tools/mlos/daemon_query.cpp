// SPDX-License-Identifier: Apache-2.0
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

Result<protocol::DaemonClient> connect(const std::string& socket) {
  auto client = protocol::DaemonClient::connect(socket);
  if (!client && client.error().code == MLOS_ERR_DAEMON_UNAVAILABLE) return unavailable(client.error());
  return client;
}

// Every page of mlosd's status merged into one reply: the first page's
// node figures with all the jobs. A daemon that does not page (no
// "next_after") gives everything in one reply.
Result<nlohmann::json> full_status(protocol::DaemonClient& client) {
  auto reply = client.call("status", nlohmann::json{{"limit", 512}});
  if (!reply) return reply;
  nlohmann::json merged = std::move(*reply);
  for (int pages = 0; pages < 1 << 16 && merged.contains("next_after") && merged["next_after"].is_number_unsigned();
       ++pages) {
    auto next = client.call("status", nlohmann::json{{"after", merged["next_after"]}, {"limit", 512}});
    if (!next) return next;
    for (auto& job : (*next)["jobs"]) merged["jobs"].push_back(std::move(job));
    merged["next_after"] = (*next)["next_after"];
  }
  merged.erase("next_after");
  return merged;
}

}  // namespace

std::string resolve_socket(const std::string& requested) {
  return requested.empty() ? protocol::default_socket_path() : requested;
}

Result<nlohmann::json> query_daemon_status(const std::string& socket) {
  auto client = connect(socket);
  if (!client) return client.error();
  return full_status(*client);
}

Result<nlohmann::json> query_daemon(const std::string& socket, const std::string& op, const nlohmann::json& args) {
  auto client = connect(socket);
  if (!client) return client.error();
  return client->call(op, args);
}

Result<nlohmann::json> DaemonStatusSource::fetch_once() {
  if (!client_) {
    auto c = connect(socket_);
    if (!c) return c.error();
    client_.emplace(std::move(*c));
  }
  auto reply = full_status(*client_);
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
