// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store_listen.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mlos::collectives {

namespace {

// One address to bind: its socket address, as text for messages.
struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;
};

Address any_of(int family) {
  Address a;
  if (family == AF_INET6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a.addr);
    s->sin6_family = AF_INET6;
    s->sin6_addr = in6addr_any;
    a.len = sizeof *s;
    a.text = "every address";
  } else {
    auto* s = reinterpret_cast<sockaddr_in*>(&a.addr);
    s->sin_family = AF_INET;
    s->sin_addr.s_addr = htonl(INADDR_ANY);
    a.len = sizeof *s;
    a.text = "every IPv4 address";
  }
  return a;
}

void set_port(Address* a, uint16_t port) {
  if (a->addr.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&a->addr)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(&a->addr)->sin_port = htons(port);
  }
}

uint16_t port_of(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

// The addresses `host` asks for (see the header); empty: every address.
Result<std::vector<Address>> addresses_for(const std::string& host) {
  if (host.empty() || host == "0.0.0.0" || host == "::") return std::vector<Address>{};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  const bool localhost = host == "localhost";
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc == EAI_NONAME && !localhost) return std::vector<Address>{};  // a name: every address
  if (rc == EAI_NONAME) {
    hints.ai_flags = 0;
    rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  }
  if (rc != 0) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "cannot resolve " + host + " to listen for TCPStore clients: " +
                                                     (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)));
  }
  std::vector<Address> out;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    Address a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = static_cast<socklen_t>(ai->ai_addrlen);
    char text[INET6_ADDRSTRLEN] = "";
    const void* raw = ai->ai_family == AF_INET6
                          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr)
                          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr);
    ::inet_ntop(ai->ai_family, raw, text, sizeof text);
    a.text = text;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Address& o) { return o.text == a.text; });
    if (!seen) out.push_back(a);
  }
  ::freeaddrinfo(found);
  return out;
}

// A listening socket on `a` (port already set); the errno on failure.
int listen_on(const Address& a, os::UniqueFd* out) {
  os::UniqueFd fd(::socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  const int one = 1, zero = 0;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // a restart within TIME_WAIT
  if (a.addr.ss_family == AF_INET6) {
    // Every address: IPv4 mapped too. One IPv6 address: that one only.
    const bool any = a.text == "every address";
    (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, any ? &zero : &one, sizeof one);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a.addr), a.len) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0) {
    return errno;
  }
  *out = std::move(fd);
  return 0;
}

Status listen_error(int e, const std::string& where, uint16_t port) {
  return make_sys_error(e, "cannot listen for TCPStore clients on " + where + " port " + std::to_string(port),
                        MLOS_ERR_IO);
}

}  // namespace

Result<StoreListeners> listen_for_store(const std::string& host, uint16_t port) {
  auto asked = addresses_for(host);
  if (!asked) return asked.error();
  StoreListeners l;
  if (asked->empty()) {  // IPv6 with IPv4 mapped, or IPv4 alone without IPv6
    int e = 0;
    for (int family : {AF_INET6, AF_INET}) {
      Address a = any_of(family);
      set_port(&a, port);
      os::UniqueFd fd;
      e = listen_on(a, &fd);
      if (e == 0) {
        l.port = port_of(fd.get());
        l.where = "every address";
        l.fds.push_back(std::move(fd));
        return l;
      }
      if (e == EADDRINUSE) break;  // taken for IPv4 too
    }
    return listen_error(e, "every address", port).error();
  }
  // Each address asked for, all on one port (the first one's, when 0). An
  // address this host cannot have ("localhost"'s ::1 without IPv6) is
  // skipped while another one binds.
  int unavailable = 0;
  for (Address& a : *asked) {
    set_port(&a, l.port != 0 ? l.port : port);
    os::UniqueFd fd;
    const int e = listen_on(a, &fd);
    if (e == EAFNOSUPPORT || e == EADDRNOTAVAIL) {
      unavailable = e;
      continue;
    }
    if (e != 0) return listen_error(e, a.text, port).error();
    if (l.port == 0) l.port = port_of(fd.get());
    l.where += (l.where.empty() ? "" : " and ") + a.text;
    l.fds.push_back(std::move(fd));
  }
  if (l.fds.empty()) return listen_error(unavailable, host, port).error();
  return l;
}

size_t descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return static_cast<size_t>(r.rlim_cur);
}

size_t raise_descriptor_limit(size_t* raised_from) {
  *raised_from = 0;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return descriptor_limit();
  if (r.rlim_cur < r.rlim_max) {
    const rlim_t before = r.rlim_cur;
    r.rlim_cur = r.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &r) == 0) *raised_from = static_cast<size_t>(before);
  }
  return descriptor_limit();
}

size_t store_connection_budget(size_t limit, size_t cap) { return std::min(cap, limit / 2); }

size_t store_descriptor_ceiling(size_t limit) {
  if (limit == SIZE_MAX) return SIZE_MAX;
  return limit - std::min(limit, std::max<size_t>(32, limit / 8));
}

}  // namespace mlos::collectives
