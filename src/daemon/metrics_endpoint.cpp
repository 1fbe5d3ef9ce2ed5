// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics_endpoint.h"

#include <CivetServer.h>

#include <vector>

namespace mlos::daemon {

class MetricsEndpoint::Handler : public CivetHandler {
 public:
  explicit Handler(std::function<std::string()> render) : render_(std::move(render)) {}

  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    const std::string body = render_();
    mg_send_http_ok(conn, "text/plain; version=0.0.4; charset=utf-8", static_cast<long long>(body.size()));
    mg_write(conn, body.data(), body.size());
    return true;
  }

 private:
  std::function<std::string()> render_;
};

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& listen,
                                                                 std::function<std::string()> render) {
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint);
  e->handler_ = std::make_unique<Handler>(std::move(render));
  // civetweb's defaults (2 workers here, 30 s read timeout) would let eight
  // half-open connections hold the endpoint: more workers than a scraper
  // needs, and a short read timeout, so silent connections are dropped
  // within 2 s.
  const std::vector<std::string> options{"listening_ports", listen,        "num_threads",          "16",
                                         "request_timeout_ms", "2000",     "keep_alive_timeout_ms", "2000"};
  try {
    e->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception& ex) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "cannot serve metrics on " + listen + ": " + ex.what());
  }
  e->server_->addHandler("/metrics", e->handler_.get());
  const std::vector<int> ports = e->server_->getListeningPorts();
  e->port_ = ports.empty() ? 0 : ports.front();
  return e;
}

MetricsEndpoint::~MetricsEndpoint() { server_.reset(); }

}  // namespace mlos::daemon
