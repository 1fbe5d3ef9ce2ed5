/* SPDX-License-Identifier: Apache-2.0 */
// A client's connection to mlosd: one request, one reply, over the framed
// protocol of frame_codec.h. Used by libmlos (MLOS_MODE=daemon/auto) and by
// the mlos CLI. Blocking, with a timeout on every reply.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "os/unique_fd.h"
#include "protocol/frame_codec.h"

namespace mlos::protocol {

// $MLOS_DAEMON_SOCKET, else /run/mlos/mlosd.sock.
std::string default_socket_path();

class DaemonClient {
 public:
  // Connects and exchanges "hello" (protocol version check).
  // DAEMON_UNAVAILABLE when nothing answers at `path`; VERSION_MISMATCH if
  // the daemon speaks another protocol. `timeout_ms` bounds each reply. It
  // must exceed what mlosd may legitimately take: a request that loads a
  // policy waits for the host's start (PolicyHostsConfig::start_deadline_ms,
  // 5 s) and attach (1 s), longer on a busy machine, where the host runs at
  // nice 10. A shorter wait called a busy daemon dead.
  static Result<DaemonClient> connect(const std::string& path, int timeout_ms = kReplyTimeoutMs);
  static constexpr int kReplyTimeoutMs = 15000;

  // Sends {"op": op, "id": n, ...args} (with `pass_fd` attached when >= 0)
  // and returns the reply's fields. A reply with "ok": false becomes its
  // error (code and message from the daemon). DAEMON_UNAVAILABLE if the
  // connection broke: *sent (if given) says whether the request had been
  // written whole before that, i.e. whether the daemon may have acted on it.
  // A request over kMaxRequestPayload is INVALID_ARGUMENT, not sent, and
  // the connection stays usable.
  Result<nlohmann::json> call(const std::string& op, nlohmann::json args = nlohmann::json::object(),
                              int pass_fd = -1, bool* sent = nullptr);

  const nlohmann::json& hello() const { return hello_; }
  const std::string& path() const { return path_; }

 private:
  DaemonClient(os::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  // The next reply frame's payload (events skipped); nullopt at end of
  // stream, TIMEOUT when the receive timeout passes first.
  Result<std::optional<nlohmann::json>> read_frame(FrameDecoder& decoder);
  // The daemon's refusal of this connection (one error reply, id 0, sent at
  // accept before it closes), if one is waiting to be read.
  std::optional<Error> refusal();
  os::UniqueFd fd_;
  std::string path_;
  uint64_t next_id_ = 1;
  nlohmann::json hello_;
};

// True for the connect errors that mean no daemon is there at all (no
// socket file, or nothing accepting on it): the only case in which
// MLOS_MODE=auto may fall back to the embedded engine. A daemon that is up
// but refuses, is saturated or times out is an error the caller sees.
bool nobody_listens(const Error& e);

// The reply for a failed request: {"id", "ok": false, "error": {"code",
// "name", "message"}}; the client turns it back into the Error.
nlohmann::json error_reply(uint64_t id, const Error& error);
Error error_from_reply(const nlohmann::json& reply);

}  // namespace mlos::protocol
