/* SPDX-License-Identifier: Apache-2.0 */
// A server of torch's TCPStore protocol (tcp_store.h), for a launch where
// nobody else serves the store: rank 0 serves it, as torch's rank 0 does
// under env:// and tcp:// initialisation. torch's own clients (Python
// ranks, `torch.distributed.TCPStore(host, port, is_master=False)`) and
// ours both work against it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace mlos::collectives {

struct TcpStoreServerOptions {
  // Where to listen (tcp_store_listen.h): a numeric address or "localhost"
  // binds just that; "" or another name binds every address.
  std::string host;
  uint16_t port = 0;  // 0: a free one
  // Non-empty: a client must send it (the AUTH request, tcp_store.h) right
  // after VALIDATE, or its connection is closed; torch's own clients, which
  // cannot, are then refused. Empty: anyone who reaches the port is served.
  std::string secret;
  // A connection must VALIDATE (and AUTH) this soon after it is accepted,
  // and a request must arrive whole this soon after its first byte, or the
  // connection is closed. A validated connection between requests may
  // idle for the whole run, as torch's clients do.
  std::chrono::milliseconds validate_within{10000};
  std::chrono::milliseconds request_within{30000};
  // Connections at once, further bounded by the descriptors the process
  // has (half the soft RLIMIT_NOFILE, which listen() raises to the hard
  // limit where it is lower).
  size_t max_connections = 4096;
  // Everything the server holds: keys, values (stored, or still being sent
  // in replies), wait records, requests being received, reply bytes.
  size_t max_memory_bytes = size_t{1} << 30;
  // Of that, requests being received (all connections together).
  size_t max_input_bytes = size_t{128} << 20;
};

class TcpStoreServer {
 public:
  // Listens where `options` say and serves from a thread of its own. Every
  // request torch 2.x's client sends is answered as torch's libuv server
  // answers it. Hostile bytes cost only their own connection: a first
  // request other than VALIDATE with the magic number, a wrong or missing
  // secret, an unknown query, a key over 8 KiB, a value over 8 MiB, more
  // than 128Ki keys in one request, a request over 64 MiB, a request or a
  // reply past the memory bounds, or a deadline missed closes that
  // connection. Replies refer to stored values instead of copying them.
  // Errors: IO naming the address and port, with the errno (EADDRINUSE when
  // taken); INVALID_ARGUMENT for a host that does not resolve.
  static Result<std::unique_ptr<TcpStoreServer>> listen(const TcpStoreServerOptions& options);
  // Every address at `port`, no secret, the default bounds.
  static Result<std::unique_ptr<TcpStoreServer>> listen(uint16_t port);

  // Stops the thread and closes every connection before returning.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const;
  // Where it listens: "127.0.0.1", "every address"...
  const std::string& where() const;

  // Figures the server's thread keeps, read at any time (each exact, not
  // all from one instant).
  struct Stats {
    size_t connections = 0;
    size_t memory_bytes = 0;   // everything counted against max_memory_bytes
    size_t input_bytes = 0;    // requests being received
    size_t value_bytes = 0;    // values alive (stored, or referenced by a reply)
    size_t output_bytes = 0;   // the replies' own bytes not yet sent
    uint64_t requests = 0;     // handled since it started
    uint64_t refused = 0;      // connections closed for breaking a rule
    uint64_t wait_steps = 0;   // steps of the wait records (tcp_store_waits.h)
    uint64_t scan_steps = 0;   // fields scanned to find where requests end (tcp_store_frame.h)
  };
  Stats stats() const;

  class Impl;

 private:
  explicit TcpStoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlos::collectives
