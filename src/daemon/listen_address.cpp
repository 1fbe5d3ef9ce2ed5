// SPDX-License-Identifier: Apache-2.0
#include "daemon/listen_address.h"

#include <arpa/inet.h>

#include <cctype>

namespace mlos::daemon {

namespace {

bool is_port(const std::string& s, int* port) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  if (s.size() > 1 && s[0] == '0') return false;
  *port = std::stoi(s);
  return *port <= 65535;
}

bool is_host_name(const std::string& s) {
  if (s.empty() || s.size() > 253 || s.front() == '-' || s.front() == '.') return false;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '.') return false;
  }
  return true;
}

}  // namespace

Result<ListenAddress> parse_listen_address(const std::string& text) {
  auto refuse = [&text] {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "metrics_listen \"" + text +
                          "\" is not PORT, HOST:PORT or [IPV6]:PORT with PORT 0 to 65535 (\"\" turns metrics off)");
  };
  ListenAddress a;
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    if (!is_port(text, &a.port)) return refuse();
    return a;
  }
  if (!is_port(text.substr(colon + 1), &a.port)) return refuse();
  a.host = text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') {
    in6_addr v6{};
    if (inet_pton(AF_INET6, a.host.substr(1, a.host.size() - 2).c_str(), &v6) != 1) return refuse();
    return a;
  }
  in_addr v4{};
  const bool dotted = a.host.find_first_not_of("0123456789.") == std::string::npos;
  if (dotted ? inet_pton(AF_INET, a.host.c_str(), &v4) != 1 : !is_host_name(a.host)) return refuse();
  return a;
}

}  // namespace mlos::daemon
