/* SPDX-License-Identifier: Apache-2.0 */
// A server of torch's TCPStore protocol (tcp_store.h), for a launch where
// nobody else serves the store: rank 0 serves it, as torch's rank 0 does
// under env:// and tcp:// initialisation. torch's own clients (Python
// ranks, `torch.distributed.TCPStore(host, port, is_master=False)`) and
// ours both work against it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace mlos::collectives {

class TcpStoreServer {
 public:
  // Listens on every address of this host at `port` (0: a free one) and
  // serves from a thread of its own. Every request torch 2.x's client
  // sends is answered as torch's libuv server answers it. Hostile bytes
  // cost only their own connection: a first request other than VALIDATE
  // with the magic number, an unknown query, a key over 8 KiB, a value
  // over 8 MiB, more than 128Ki keys in one request or a request over
  // 64 MiB closes that connection. At most 4096 connections at once; the
  // keys and values it holds are capped at 1 GiB together (a write past
  // that closes the writer's connection).
  // Errors: IO naming the port, with the errno (EADDRINUSE when taken).
  static Result<std::unique_ptr<TcpStoreServer>> listen(uint16_t port);

  // Stops the thread and closes every connection before returning.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const;

  class Impl;

 private:
  explicit TcpStoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlos::collectives
