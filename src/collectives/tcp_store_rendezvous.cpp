// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store_rendezvous.h"

#include <netdb.h>
#include <sys/socket.h>

#include <map>
#include <mutex>

#include "collectives/tcp_store.h"
#include "collectives/tcp_store_server.h"
#include "os/log_sink.h"
#include "os/unique_fd.h"

namespace mlos::collectives {

namespace {

constexpr std::chrono::milliseconds kProbeTimeout{2000};

// Whether `host` names an address of this machine: one of its addresses
// can be bound here.
bool is_local_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool local = false;
  for (const addrinfo* ai = found; ai != nullptr && !local; ai = ai->ai_next) {
    os::UniqueFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    local = ::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0;  // port 0 from getaddrinfo: any
  }
  ::freeaddrinfo(found);
  return local;
}

// This process's server for `port`, started on first use and never
// destroyed: the process keeps it until it exits (the kernel then closes
// its sockets). No destructor runs at exit, so none joins a thread while
// the process ends, nor in a forked child, which has no such thread.
Result<std::shared_ptr<TcpStoreServer>> serve_for_process(const std::string& host, uint16_t port,
                                                          const std::string& secret) {
  static auto* mu = new std::mutex;
  static auto* servers = new std::map<uint16_t, std::shared_ptr<TcpStoreServer>>;
  std::lock_guard lock(*mu);
  if (auto it = servers->find(port); it != servers->end()) return it->second;
  TcpStoreServerOptions options;
  options.host = host;
  options.port = port;
  options.secret = secret;
  auto started = TcpStoreServer::listen(options);
  if (!started) return started.error();
  std::shared_ptr<TcpStoreServer> server = std::move(*started);
  (*servers)[port] = server;
  log_message(MLOS_LOG_INFO, "serving the TCPStore rendezvous on " + server->where() + " port " +
                                 std::to_string(port) + (secret.empty() ? "" : ", to clients with the group secret,") +
                                 " until this process exits (no server answered there)");
  return server;
}

}  // namespace

Result<std::shared_ptr<gloo::rendezvous::Store>> open_tcp_store(const std::string& host, uint16_t port,
                                                                 bool may_serve, std::chrono::milliseconds timeout,
                                                                 const std::string& secret) {
  try {
    if (may_serve && is_local_address(host)) {
      // A server that already answers (an agent, a torch rank 0, an earlier
      // group of this process) is used as it is.
      if (auto found = TcpStore::probe(host, port, std::min(timeout, kProbeTimeout), secret)) {
        return std::shared_ptr<gloo::rendezvous::Store>(std::move(found));
      }
      auto served = serve_for_process(host, port, secret);
      // EADDRINUSE: someone began listening since the probe; be its client.
      if (!served && served.error().sys_errno != EADDRINUSE) return served.error();
    }
    return std::shared_ptr<gloo::rendezvous::Store>(std::make_shared<TcpStore>(host, port, timeout, secret));
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    return make_error(msg.find("timed out") != std::string::npos ? MLOS_ERR_TIMEOUT : MLOS_ERR_IO, msg);
  }
}

}  // namespace mlos::collectives
