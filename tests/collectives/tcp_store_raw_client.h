/* SPDX-License-Identifier: Apache-2.0 */
// What the TCPStore tests share: a server on a free port, a client that
// speaks raw bytes (for what torch's client would never send), and the
// protocol's framing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectives/tcp_store.h"
#include "collectives/tcp_store_server.h"

namespace mlos::collectives::store_test {

using std::chrono::milliseconds;
using tcpstore::Query;

// Generous: a busy 2-core machine must never fail a test by being slow.
constexpr milliseconds kPatient{20000};

inline std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string text(const std::vector<char>& v) { return {v.begin(), v.end()}; }

inline std::unique_ptr<TcpStoreServer> serve() {
  auto s = TcpStoreServer::listen(0);
  EXPECT_TRUE(s) << s.error().message;
  return s ? std::move(*s) : nullptr;
}

// A port nothing listens on right now (the kernel may hand it out again
// later, which these tests accept).
inline uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A client speaking raw bytes, for what torch's client would never send.
class RawClient {
 public:
  explicit RawClient(uint16_t port, uint32_t addr = INADDR_LOOPBACK) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(addr);
    a.sin_port = htons(port);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  int fd() const { return fd_; }

  RawClient& send(const std::string& b) {
    EXPECT_EQ(::send(fd_, b.data(), b.size(), MSG_NOSIGNAL), static_cast<ssize_t>(b.size()));
    return *this;
  }
  // Up to n bytes; fewer when the server closed the connection first.
  std::string receive(size_t n) {
    std::string got;
    char buf[4096];
    while (got.size() < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(kPatient.count())) <= 0) break;
      const ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - got.size()), 0);
      if (r <= 0) break;
      got.append(buf, static_cast<size_t>(r));
    }
    return got;
  }
  // Whether the server closed this connection (EOF, or reset).
  bool closed_by_server() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kPatient.count())) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  int fd_;
};

template <class T>
std::string raw(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}
inline std::string query(Query q) { return std::string(1, static_cast<char>(q)); }
inline std::string framed(const std::string& s) { return raw<uint64_t>(s.size()) + s; }
inline std::string validate() { return query(Query::kValidate) + raw<uint32_t>(tcpstore::kValidationMagic); }

}  // namespace mlos::collectives::store_test
