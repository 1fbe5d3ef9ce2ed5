/* SPDX-License-Identifier: Apache-2.0 */
// How mlos reaches mlosd: "status" (every page) or one other request over
// protocol::DaemonClient.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "protocol/daemon_client.h"

namespace mlos::cli {

// `requested` if not empty, else protocol::default_socket_path()
// ($MLOS_DAEMON_SOCKET, else /run/mlos/mlosd.sock).
std::string resolve_socket(const std::string& requested);

// Connects to the mlosd at `socket` and returns its "status" reply (the
// whole reply object: "daemon", "jobs", "cpus", ...). DAEMON_UNAVAILABLE
// when nothing answers there, with a message naming the socket and saying
// how to start one; other codes when a daemon answered but refused.
Result<nlohmann::json> query_daemon_status(const std::string& socket);

// One request `op` with `args` to the mlosd at `socket`, on a connection of
// its own; the reply's fields, or its error (DAEMON_UNAVAILABLE as above).
Result<nlohmann::json> query_daemon(const std::string& socket, const std::string& op,
                                    const nlohmann::json& args = nlohmann::json::object());

// A connection kept open across refreshes (mlos top). fetch() reconnects
// once if the daemon went away since the last call (e.g. it restarted), and
// fails with DAEMON_UNAVAILABLE if that does not work either.
class DaemonStatusSource {
 public:
  explicit DaemonStatusSource(std::string socket) : socket_(std::move(socket)) {}
  Result<nlohmann::json> fetch();
  const std::string& socket() const { return socket_; }

 private:
  Result<nlohmann::json> fetch_once();
  std::string socket_;
  std::optional<protocol::DaemonClient> client_;
};

}  // namespace mlos::cli
