/* SPDX-License-Identifier: Apache-2.0 */
// The address mlosd serves /metrics on (config metrics_listen,
// --metrics-listen), checked when the config is read, so --check-config
// and a reload refuse a typo that civetweb would only report at start as
// "null context when constructing CivetServer".
#pragma once

#include <string>

#include "core/status.h"

namespace mlos::daemon {

struct ListenAddress {
  std::string host;  // "" (every address), an IPv4 address, "[IPv6]" or a host name
  int port = 0;      // 0 picks a free port
};

// "PORT", "HOST:PORT" or "[IPV6]:PORT", one address, PORT 0 to 65535
// written without leading zeros, HOST an IPv4 address (inet_pton's
// dotted quad), a bracketed IPv6 address (inet_pton) or a host name
// (letters, digits, '-' and '.'; resolved when mlosd starts).
// INVALID_ARGUMENT naming the form otherwise. "" (metrics off) is the
// caller's to handle: it is refused here.
Result<ListenAddress> parse_listen_address(const std::string& text);

}  // namespace mlos::daemon
