/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's HTTP /metrics endpoint: civetweb (the server prometheus-cpp's
// Exposer wraps) with one handler that renders the daemon's registry.
// Not the Exposer itself: it adds series of its own (exposer_*, with NaN
// quantiles before the first scrape) that cannot be turned off, and a
// node's scrapes are not mlOS's to report.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

class CivetServer;

namespace mlos::daemon {

class MetricsEndpoint {
 public:
  // Serves GET /metrics on `listen` ("host:port"; port 0 picks one) with
  // what `render` returns (the text exposition format), on civetweb's own
  // threads: `render` must be thread-safe. INVALID_ARGUMENT if the address
  // cannot be served.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& listen,
                                                        std::function<std::string()> render);
  ~MetricsEndpoint();

  // The port it listens on (the one picked, for port 0).
  int port() const { return port_; }

 private:
  class Handler;
  MetricsEndpoint() = default;

  std::unique_ptr<Handler> handler_;
  std::unique_ptr<CivetServer> server_;  // stopped (destroyed) before the handler it calls
  int port_ = 0;
};

}  // namespace mlos::daemon
