// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace mlos::collectives {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a cancelled wait may take to be acknowledged before the
// connection is given up as out of step.
constexpr milliseconds kCancelGrace{2000};
constexpr milliseconds kFirstBackoff{10};
constexpr milliseconds kMaxBackoff{1000};

struct Deadline {
  Clock::time_point at;
  static Deadline after(milliseconds d) { return Deadline{Clock::now() + d}; }
  bool passed() const { return Clock::now() >= at; }
  int poll_ms() const {
    const auto left = std::chrono::ceil<milliseconds>(at - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
  }
};

// A failure on the connection itself (its framing is then unknown, so the
// connection is closed). The message says "timed out" when time ran out.
struct WireError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Something answered, but not as a TCPStore: not worth retrying.
struct NotATcpStore : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string errno_text(int e) { return std::system_category().message(e); }

// True when `fd` has `events` (or an error to report) before the deadline.
bool ready_before(int fd, short events, const Deadline& d) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, d.poll_ms());
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw WireError("poll: " + errno_text(errno));
  }
}

void send_all(int fd, const std::string& bytes, const Deadline& d) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!ready_before(fd, POLLOUT, d)) throw WireError("sending the request timed out");
    } else {
      throw WireError("send: " + errno_text(errno));
    }
  }
}

void recv_all(int fd, void* out, size_t n, const Deadline& d) {
  auto* p = static_cast<char*>(out);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0) {
      throw WireError("the server closed the connection");
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!ready_before(fd, POLLIN, d)) throw WireError("waiting for the reply timed out");
    } else {
      throw WireError("recv: " + errno_text(errno));
    }
  }
}

template <class T>
T recv_value(int fd, const Deadline& d) {
  T v{};
  recv_all(fd, &v, sizeof v, d);
  return v;
}

std::vector<char> recv_bytes(int fd, const Deadline& d) {
  const auto n = recv_value<uint64_t>(fd, d);
  if (n > tcpstore::kMaxValueBytes) throw WireError("the server sent a value of " + std::to_string(n) + " bytes");
  std::vector<char> v(n);
  if (n) recv_all(fd, v.data(), n, d);
  return v;
}

// One request, framed as torch's client frames it.
class Request {
 public:
  explicit Request(tcpstore::Query q) { bytes_.push_back(static_cast<char>(q)); }
  template <class T>
  Request& raw(T v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Request& key(const std::string& k) {
    raw<uint64_t>(sizeof tcpstore::kKeyPrefix - 1 + k.size());
    bytes_ += tcpstore::kKeyPrefix;
    bytes_ += k;
    return *this;
  }
  Request& value(const std::vector<char>& v) {
    raw<uint64_t>(v.size());
    bytes_.append(v.data(), v.size());
    return *this;
  }
  Request& keys(const std::vector<std::string>& ks) {
    raw<uint64_t>(ks.size());
    for (const auto& k : ks) key(k);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

std::string format_address(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string describe_keys(const std::vector<std::string>& keys) {
  if (keys.empty()) return "no keys";
  std::string s = "key \"" + keys[0] + "\"";
  if (keys.size() > 1) s += " (and " + std::to_string(keys.size() - 1) + " more)";
  return s;
}

// One connection attempt to each address of host:port in turn: the
// connected socket (non-blocking, TCP_NODELAY), or none with the reason.
os::UniqueFd connect_once(const std::string& host, uint16_t port, const Deadline& d, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *why = "cannot resolve " + host + ": " + (rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc));
    return {};
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    os::UniqueFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      *why = "socket: " + errno_text(errno);
      continue;
    }
    int err = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
      err = ETIMEDOUT;
      if (ready_before(fd.get(), POLLOUT, d)) {
        socklen_t len = sizeof err;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      const int one = 1;
      (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small requests, one at a time
      return fd;
    }
    *why = "connect: " + errno_text(err);
  }
  return {};
}

// A server that takes no secret, asked with one: not worth retrying.
struct SecretRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// VALIDATE (torch's server drops a connection whose first request is
// anything else), then the secret when there is one, then PING: the echoed
// nonce proves a TCPStore answers.
void handshake(int fd, const std::string& secret, const Deadline& d) {
  static std::atomic<uint32_t> counter{0};
  const uint32_t nonce = static_cast<uint32_t>(::getpid()) * 2654435761u + counter.fetch_add(1);
  Request validate(tcpstore::Query::kValidate);
  validate.raw<uint32_t>(tcpstore::kValidationMagic);
  Request auth(tcpstore::Query::kMlosAuth);
  auth.value(std::vector<char>(secret.begin(), secret.end()));
  Request ping(tcpstore::Query::kPing);
  ping.raw<uint32_t>(nonce);
  send_all(fd, validate.bytes() + (secret.empty() ? std::string() : auth.bytes()) + ping.bytes(), d);
  if (!secret.empty()) {
    uint8_t answer = 0;
    try {
      answer = recv_value<uint8_t>(fd, d);
    } catch (const WireError& e) {
      // Retried (a server at its connection budget closes at once too);
      // the last reason is in the timeout's message.
      if (std::string(e.what()).find("closed") == std::string::npos) throw;
      throw WireError("it closed the connection on MLOS_STORE_SECRET: another secret, or a server that takes none "
                      "(torch's own, as torchrun's agent runs)");
    }
    if (answer == tcpstore::kAuthNotAsked) {
      throw SecretRefused("it takes no secret (a server started without MLOS_STORE_SECRET), and this rank has one");
    }
    if (answer != tcpstore::kAuthAccepted) throw NotATcpStore("its reply to MLOS_AUTH was not one");
  }
  const auto echoed = recv_value<uint32_t>(fd, d);
  if (echoed != nonce) throw NotATcpStore("its reply to PING was not the nonce sent");
}

// A connected, validated socket. With `retry`, a failed attempt (refused,
// reset, closed during the handshake) is repeated with growing, jittered
// pauses until the deadline; without, a failed connect returns none.
os::UniqueFd open_connection(const std::string& host, uint16_t port, const std::string& address,
                             const std::string& secret, milliseconds timeout, bool retry) {
  const Deadline d = Deadline::after(timeout);
  std::minstd_rand jitter(std::random_device{}());
  milliseconds backoff = kFirstBackoff;
  std::string why;
  bool closed_on_secret = false;  // by some attempt: said in the timeout's message
  for (int attempts = 1;; ++attempts) {
    os::UniqueFd fd = connect_once(host, port, d, &why);
    if (fd.valid()) {
      try {
        handshake(fd.get(), secret, d);
        return fd;
      } catch (const NotATcpStore& e) {
        throw std::runtime_error("something answers at " + address + ", but not as a TCPStore: " + e.what());
      } catch (const SecretRefused& e) {
        throw std::runtime_error("the TCPStore at " + address + " refused this rank: " + e.what());
      } catch (const WireError& e) {
        why = std::string("handshake: ") + e.what();
        closed_on_secret = closed_on_secret || why.find("MLOS_STORE_SECRET") != std::string::npos;
        if (!retry) throw std::runtime_error("TCPStore at " + address + ": " + why);
      }
    } else if (!retry) {
      return {};
    }
    if (d.passed()) {
      throw std::runtime_error("connecting to the TCPStore at " + address + " timed out after " +
                               std::to_string(timeout.count()) + " ms (" + std::to_string(attempts) +
                               " attempts; last: " + why + ")" +
                               (closed_on_secret && why.find("MLOS_STORE_SECRET") == std::string::npos
                                    ? "; an earlier attempt was closed on MLOS_STORE_SECRET: another secret, or a "
                                      "server that takes none"
                                    : ""));
    }
    const milliseconds pause{std::uniform_int_distribution<long long>(backoff.count() / 2, backoff.count())(jitter)};
    std::this_thread::sleep_for(std::min<milliseconds>(pause, milliseconds(d.poll_ms())));
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

// A wait that ran out of time and was cancelled: the connection is still
// in step, unlike after a WireError.
struct WaitTimedOut : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

TcpStore::TcpStore(std::string host, uint16_t port, milliseconds timeout, std::string secret)
    : host_(std::move(host)),
      port_(port),
      address_(format_address(host_, port)),
      timeout_(timeout),
      secret_(std::move(secret)) {
  fd_ = open_connection(host_, port_, address_, secret_, timeout_, /*retry=*/true);
}

TcpStore::TcpStore(std::string host, uint16_t port, milliseconds timeout, std::string secret, os::UniqueFd fd,
                   Connected)
    : host_(std::move(host)),
      port_(port),
      address_(format_address(host_, port)),
      timeout_(timeout),
      secret_(std::move(secret)),
      fd_(std::move(fd)) {}

TcpStore::~TcpStore() = default;

std::unique_ptr<TcpStore> TcpStore::probe(const std::string& host, uint16_t port, milliseconds timeout,
                                          const std::string& secret) {
  os::UniqueFd fd = open_connection(host, port, format_address(host, port), secret, timeout, /*retry=*/false);
  if (!fd.valid()) return nullptr;
  return std::unique_ptr<TcpStore>(new TcpStore(host, port, timeout, secret, std::move(fd), Connected{}));
}

void TcpStore::close_connection() { fd_.reset(); }

void TcpStore::ensure_connected() {
  if (!fd_.valid()) fd_ = open_connection(host_, port_, address_, secret_, timeout_, /*retry=*/true);
}

template <class F>
auto TcpStore::exchange(const char* what, const std::string& key, F&& f) {
  std::lock_guard lock(mu_);
  ensure_connected();
  try {
    return f(fd_.get());
  } catch (const WireError& e) {
    close_connection();
    throw std::runtime_error("TCPStore at " + address_ + ": " + what + " of " + key + ": " + e.what());
  }
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  exchange("set", "key \"" + key + "\"", [&](int fd) {
    send_all(fd, Request(tcpstore::Query::kSet).key(key).value(data).bytes(), Deadline::after(timeout_));
  });
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  return exchange("get", "key \"" + key + "\"", [&](int fd) {
    const Deadline d = Deadline::after(timeout_);
    send_all(fd, Request(tcpstore::Query::kGet).key(key).bytes(), d);
    return recv_bytes(fd, d);
  });
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  return exchange("add", "key \"" + key + "\"", [&](int fd) {
    const Deadline d = Deadline::after(timeout_);
    send_all(fd, Request(tcpstore::Query::kAdd).key(key).raw<int64_t>(delta).bytes(), d);
    return recv_value<int64_t>(fd, d);
  });
}

std::vector<char> TcpStore::compare_set(const std::string& key, const std::vector<char>& expected,
                                        const std::vector<char>& desired) {
  return exchange("compare_set", "key \"" + key + "\"", [&](int fd) {
    const Deadline d = Deadline::after(timeout_);
    send_all(fd, Request(tcpstore::Query::kCompareSet).key(key).value(expected).value(desired).bytes(), d);
    return recv_bytes(fd, d);
  });
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  return exchange("check", describe_keys(keys), [&](int fd) {
    const Deadline d = Deadline::after(timeout_);
    send_all(fd, Request(tcpstore::Query::kCheck).keys(keys).bytes(), d);
    const auto reply = recv_value<uint8_t>(fd, d);
    if (reply != tcpstore::kReady && reply != tcpstore::kNotReady) {
      throw WireError("unexpected reply " + std::to_string(reply) + " to CHECK");
    }
    return reply == tcpstore::kReady;
  });
}

// A timeout of zero (Gloo's "no timeout") waits the store's timeout: every
// wait here ends.
void TcpStore::wait(const std::vector<std::string>& keys, const milliseconds& timeout) {
  const milliseconds limit = timeout.count() > 0 ? timeout : timeout_;
  exchange("wait", describe_keys(keys), [&](int fd) {
    send_all(fd, Request(tcpstore::Query::kWait).keys(keys).bytes(), Deadline::after(timeout_));
    if (ready_before(fd, POLLIN, Deadline::after(limit))) {
      const auto reply = recv_value<uint8_t>(fd, Deadline::after(timeout_));
      if (reply != tcpstore::kStopWaiting) throw WireError("unexpected reply " + std::to_string(reply) + " to WAIT");
      return;
    }
    // The server may have answered just before the cancel arrived: then
    // STOP_WAITING comes first, and WAIT_CANCELED still follows.
    const Deadline grace = Deadline::after(kCancelGrace);
    send_all(fd, Request(tcpstore::Query::kCancelWait).bytes(), grace);
    auto reply = recv_value<uint8_t>(fd, grace);
    if (reply == tcpstore::kStopWaiting) reply = recv_value<uint8_t>(fd, grace);
    if (reply != tcpstore::kWaitCanceled) {
      throw WireError("unexpected reply " + std::to_string(reply) + " to CANCEL_WAIT");
    }
    throw WaitTimedOut("TCPStore at " + address_ + ": wait for " + describe_keys(keys) + " timed out after " +
                       std::to_string(limit.count()) + " ms");
  });
}

}  // namespace mlos::collectives
