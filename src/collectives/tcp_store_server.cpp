// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/tcp_store.h"
#include "os/unique_fd.h"

namespace mlos::collectives {

namespace {

using tcpstore::Query;

constexpr size_t kMaxRequestBytes = 64u << 20;
constexpr size_t kMaxHeldBytes = 1u << 30;
constexpr size_t kMaxConnections = 4096;
// A connection whose replies pile up this far is not read from until it
// reads them; one whose replies exceed the cap is closed.
constexpr size_t kPauseReadingAt = 4u << 20;
constexpr size_t kMaxPendingReply = 64u << 20;
constexpr size_t kReadChunk = 64u << 10;
constexpr size_t kMaxReadPerRound = 1u << 20;  // then other connections get their turn

// Reads one request's fields from the bytes buffered so far. A field not
// all there yet records how many bytes the request needs at least (the
// loop tries again only then); one that breaks a limit records why.
class Cursor {
 public:
  Cursor(const char* p, size_t n) : p_(p), n_(n) {}

  template <class T>
  bool value(T* out) {
    if (!have(sizeof(T))) return false;
    std::memcpy(out, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool bytes(uint64_t limit, const char* what, std::string* out) {
    uint64_t len = 0;
    if (!value(&len)) return false;
    if (len > limit) return refuse(std::string(what) + " of " + std::to_string(len) + " bytes");
    if (!have(len)) return false;
    out->assign(p_ + pos_, len);
    pos_ += len;
    return true;
  }
  bool key(std::string* out) { return bytes(tcpstore::kMaxKeyBytes, "a key", out); }
  bool val(std::string* out) { return bytes(tcpstore::kMaxValueBytes, "a value", out); }
  bool count(uint64_t* out) {
    if (!value(out)) return false;
    if (*out > tcpstore::kMaxKeysPerRequest) return refuse(std::to_string(*out) + " keys in one request");
    return true;
  }
  bool keys(std::vector<std::string>* out) {
    uint64_t n = 0;
    if (!count(&n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      if (!key(&out->emplace_back())) return false;
    }
    return true;
  }

  size_t consumed() const { return pos_; }
  size_t need() const { return need_; }
  const std::string& refused() const { return why_; }
  bool refuse(std::string why) {
    why_ = std::move(why);
    return false;
  }

 private:
  bool have(uint64_t k) {
    if (n_ - pos_ >= k) return true;
    if (pos_ > kMaxRequestBytes || k > kMaxRequestBytes - pos_) {
      return refuse("a request over " + std::to_string(kMaxRequestBytes >> 20) + " MiB");
    }
    need_ = pos_ + static_cast<size_t>(k);
    return false;
  }

  const char* p_;
  size_t n_;
  size_t pos_ = 0;
  size_t need_ = 0;
  std::string why_;
};

struct Connection {
  os::UniqueFd fd;
  std::string in;      // received, not yet handled from in_off on
  size_t in_off = 0;
  size_t need = 1;     // bytes from in_off a complete request needs at least
  std::string out;     // replies not yet sent from out_off on
  size_t out_off = 0;
  bool validated = false;
  bool dead = false;
  // Keys its pending WAIT (or BARRIER) still waits for; empty: none pending.
  std::vector<std::string> waiting_on;

  size_t pending_reply() const { return out.size() - out_off; }
};

template <class T>
void put_raw(std::string* s, T v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_bytes(std::string* s, const std::string& b) {
  put_raw<uint64_t>(s, b.size());
  *s += b;
}

// torch keeps counters (ADD, BARRIER) as decimal text.
bool parse_counter(const std::string& text, int64_t* out) {
  const char* e = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), e, *out);
  return ec == std::errc() && p == e;
}

}  // namespace

class TcpStoreServer::Impl {
 public:
  Impl(os::UniqueFd listen_fd, uint16_t port, os::UniqueFd wake_read, os::UniqueFd wake_write)
      : listen_fd_(std::move(listen_fd)),
        port_(port),
        wake_read_(std::move(wake_read)),
        wake_write_(std::move(wake_write)) {}

  ~Impl() {
    if (thread_.joinable()) {
      const char byte = 0;
      while (::write(wake_write_.get(), &byte, 1) < 0 && errno == EINTR) {
      }
      thread_.join();
    }
  }  // the descriptors (connections, listening socket, pipe) close with their members

  // The thread starts with every signal blocked: the application's
  // handlers run on its own threads, never on this one.
  void start() {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  uint16_t port() const { return port_; }

 private:
  enum class Outcome { kDone, kIncomplete, kRefused };

  void run();
  void accept_all();
  void read_from(uint64_t id, Connection& c);
  void handle_buffered(uint64_t id, Connection& c);
  Outcome handle_one(uint64_t id, Connection& c, Cursor& in);
  Outcome begin_wait(uint64_t id, Connection& c, const std::vector<std::string>& keys);
  void reply(Connection& c, const std::string& bytes);
  void flush(Connection& c);
  void drop(Connection& c);
  void clear_wait(uint64_t id, Connection& c);

  bool present(const std::string& key) const;
  bool store(const std::string& key, std::string value);  // false: over kMaxHeldBytes
  void wake_all(const std::string& key);
  void wake_one(const std::string& key);
  void stop_waiting(uint64_t id, const std::string& key);

  os::UniqueFd listen_fd_;
  uint16_t port_;
  os::UniqueFd wake_read_;
  os::UniqueFd wake_write_;
  std::thread thread_;

  // Everything below belongs to the thread.
  std::map<uint64_t, Connection> conns_;
  uint64_t next_id_ = 1;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;  // key -> connections waiting for it
  size_t held_bytes_ = 0;
};

void TcpStoreServer::Impl::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    for (const auto& [id, c] : conns_) {
      short events = c.pending_reply() < kPauseReadingAt ? POLLIN : 0;
      if (c.pending_reply() > 0) events |= POLLOUT;
      fds.push_back({c.fd.get(), events, 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ENOMEM: try again
      continue;
    }
    if (fds[0].revents != 0) return;
    if (fds[1].revents != 0) accept_all();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = conns_.find(ids[i - 2]);
      if (it == conns_.end() || it->second.dead) continue;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) read_from(it->first, it->second);
      if (!it->second.dead && (fds[i].revents & POLLOUT)) flush(it->second);
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (it->second.dead) {
        clear_wait(it->first, it->second);
        it = conns_.erase(it);  // closes it
      } else {
        ++it;
      }
    }
  }
}

void TcpStoreServer::Impl::accept_all() {
  for (;;) {
    os::UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors: the connection stays queued; pause rather than
      // spin on a listening socket that stays readable.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return;
    }
    if (conns_.size() >= kMaxConnections) continue;  // closed at once: the client sees it, instead of a hang
    const int one = 1;
    (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns_[next_id_++].fd = std::move(fd);
  }
}

void TcpStoreServer::Impl::read_from(uint64_t id, Connection& c) {
  char chunk[kReadChunk];
  for (size_t round = 0; round < kMaxReadPerRound && !c.dead;) {
    const ssize_t n = ::recv(c.fd.get(), chunk, sizeof chunk, 0);
    if (n > 0) {
      c.in.append(chunk, static_cast<size_t>(n));
      round += static_cast<size_t>(n);
      handle_buffered(id, c);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    } else {  // closed by the client, or reset
      drop(c);
    }
  }
}

void TcpStoreServer::Impl::handle_buffered(uint64_t id, Connection& c) {
  while (!c.dead && c.in.size() - c.in_off >= c.need) {
    Cursor in(c.in.data() + c.in_off, c.in.size() - c.in_off);
    const Outcome o = handle_one(id, c, in);
    if (o == Outcome::kRefused || !in.refused().empty()) {
      drop(c);
      return;
    }
    if (o == Outcome::kIncomplete) {
      c.need = in.need();
      break;
    }
    c.in_off += in.consumed();
    c.need = 1;
  }
  if (c.in_off == c.in.size()) {
    c.in.clear();
    c.in_off = 0;
  } else if (c.in_off >= kReadChunk) {
    c.in.erase(0, c.in_off);
    c.in_off = 0;
  }
}

// One request, parsed whole before it changes anything: a request cut off
// at the end of the buffer is read again from its start when more came.
TcpStoreServer::Impl::Outcome TcpStoreServer::Impl::handle_one(uint64_t id, Connection& c, Cursor& in) {
  const auto stalled = [&] { return in.refused().empty() ? Outcome::kIncomplete : Outcome::kRefused; };
  uint8_t q = 0;
  if (!in.value(&q)) return stalled();
  if (!c.validated) {  // as torch's server: nothing before VALIDATE with the magic number
    uint32_t magic = 0;
    if (q != static_cast<uint8_t>(Query::kValidate)) return Outcome::kRefused;
    if (!in.value(&magic)) return stalled();
    if (magic != tcpstore::kValidationMagic) return Outcome::kRefused;
    c.validated = true;
    return Outcome::kDone;
  }
  std::string key, value, other, r;
  std::vector<std::string> keys;
  switch (static_cast<Query>(q)) {
    case Query::kPing: {
      uint32_t nonce = 0;
      if (!in.value(&nonce)) return stalled();
      put_raw(&r, nonce);
      break;
    }
    case Query::kSet:
    case Query::kAppend:
    case Query::kQueuePush: {
      if (!in.key(&key) || !in.val(&value)) return stalled();
      if (static_cast<Query>(q) == Query::kQueuePush) {
        if (held_bytes_ + key.size() + value.size() > kMaxHeldBytes) return Outcome::kRefused;
        held_bytes_ += key.size() + value.size();
        queues_[key].push_back(std::move(value));
        wake_one(key);
        return Outcome::kDone;
      }
      if (static_cast<Query>(q) == Query::kAppend) {
        auto it = kv_.find(key);
        if (it != kv_.end()) value = it->second + value;
      }
      if (!store(key, std::move(value))) return Outcome::kRefused;
      wake_all(key);
      return Outcome::kDone;
    }
    case Query::kCompareSet: {
      if (!in.key(&key) || !in.val(&value) || !in.val(&other)) return stalled();
      auto it = kv_.find(key);
      if (it == kv_.end() && !value.empty()) {
        put_bytes(&r, value);  // torch answers the expected value when the key is absent
      } else if (it == kv_.end() || it->second == value) {
        if (!store(key, other)) return Outcome::kRefused;
        wake_all(key);
        put_bytes(&r, other);
      } else {
        put_bytes(&r, it->second);
      }
      break;
    }
    case Query::kGet: {
      if (!in.key(&key)) return stalled();
      auto it = kv_.find(key);
      put_bytes(&r, it == kv_.end() ? std::string() : it->second);
      break;
    }
    case Query::kAdd:
    case Query::kBarrier: {
      int64_t n = 0, now = 0;
      if (!in.key(&key) || !in.value(&n)) return stalled();
      const bool barrier = static_cast<Query>(q) == Query::kBarrier;
      if (barrier && !c.waiting_on.empty()) return Outcome::kRefused;  // one wait at a time
      auto it = kv_.find(key);
      const int64_t delta = barrier ? 1 : n;
      // A value that is not a number, or a sum that overflows: refused, as
      // torch's server refuses what std::stoll cannot read.
      if (it != kv_.end() && !parse_counter(it->second, &now)) return Outcome::kRefused;
      if (__builtin_add_overflow(now, delta, &now)) return Outcome::kRefused;
      if (!store(key, std::to_string(now))) return Outcome::kRefused;
      if (!barrier) {
        put_raw<int64_t>(&r, now);
        wake_all(key);
      } else if (now >= n) {  // the last one in: everyone goes
        wake_all(key);
        r.push_back(static_cast<char>(tcpstore::kStopWaiting));
      } else {
        c.waiting_on.push_back(key);
        waiters_[key].push_back(id);
      }
      break;
    }
    case Query::kCheck:
    case Query::kWait: {
      if (!in.keys(&keys)) return stalled();
      if (static_cast<Query>(q) == Query::kWait) return begin_wait(id, c, keys);
      bool all = true;
      for (const auto& k : keys) all = all && present(k);
      r.push_back(static_cast<char>(all ? tcpstore::kReady : tcpstore::kNotReady));
      break;
    }
    case Query::kGetNumKeys:
      put_raw<int64_t>(&r, static_cast<int64_t>(kv_.size()));
      break;
    case Query::kDeleteKey: {
      if (!in.key(&key)) return stalled();
      auto it = kv_.find(key);
      put_raw<int64_t>(&r, it == kv_.end() ? 0 : 1);
      if (it != kv_.end()) {
        held_bytes_ -= it->first.size() + it->second.size();
        kv_.erase(it);
      }
      break;
    }
    case Query::kMultiGet: {
      if (!in.keys(&keys)) return stalled();
      for (const auto& k : keys) {
        auto it = kv_.find(k);
        put_bytes(&r, it == kv_.end() ? std::string() : it->second);
        if (r.size() > kMaxPendingReply) return Outcome::kRefused;
      }
      break;
    }
    case Query::kMultiSet: {
      uint64_t n = 0;
      if (!in.count(&n)) return stalled();
      std::vector<std::pair<std::string, std::string>> pairs;
      for (uint64_t i = 0; i < n; ++i) {
        auto& [k, v] = pairs.emplace_back();
        if (!in.key(&k) || !in.val(&v)) return stalled();
      }
      for (auto& [k, v] : pairs) {
        if (!store(k, std::move(v))) return Outcome::kRefused;
        wake_all(k);
      }
      return Outcome::kDone;
    }
    case Query::kCancelWait:
      clear_wait(id, c);
      r.push_back(static_cast<char>(tcpstore::kWaitCanceled));
      break;
    case Query::kQueuePop:
    case Query::kQueueLen: {
      if (!in.key(&key)) return stalled();
      auto it = queues_.find(key);
      const size_t len = it == queues_.end() ? 0 : it->second.size();
      put_raw<int64_t>(&r, static_cast<int64_t>(len));
      if (static_cast<Query>(q) == Query::kQueuePop && len > 0) {
        put_bytes(&r, it->second.front());
        held_bytes_ -= key.size() + it->second.front().size();
        it->second.pop_front();
        if (it->second.empty()) queues_.erase(it);
      }
      break;
    }
    case Query::kListKeys:
      put_raw<int64_t>(&r, static_cast<int64_t>(kv_.size()));
      for (const auto& kv : kv_) {
        put_bytes(&r, kv.first);
        if (r.size() > kMaxPendingReply) return Outcome::kRefused;
      }
      break;
    default:  // VALIDATE again, or a query this server does not know
      return Outcome::kRefused;
  }
  reply(c, r);
  return Outcome::kDone;
}

// Distinct keys not there yet are recorded; the reply comes when the last
// of them is set (or at once when none is missing).
TcpStoreServer::Impl::Outcome TcpStoreServer::Impl::begin_wait(uint64_t id, Connection& c,
                                                               const std::vector<std::string>& keys) {
  if (!c.waiting_on.empty()) return Outcome::kRefused;  // torch's client never waits twice at once
  for (const auto& k : keys) {
    if (present(k) || std::find(c.waiting_on.begin(), c.waiting_on.end(), k) != c.waiting_on.end()) continue;
    c.waiting_on.push_back(k);
    waiters_[k].push_back(id);
  }
  if (c.waiting_on.empty()) reply(c, std::string(1, static_cast<char>(tcpstore::kStopWaiting)));
  return Outcome::kDone;
}

bool TcpStoreServer::Impl::present(const std::string& key) const {
  if (kv_.count(key) != 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

bool TcpStoreServer::Impl::store(const std::string& key, std::string value) {
  auto it = kv_.find(key);
  const size_t before = it == kv_.end() ? 0 : key.size() + it->second.size();
  const size_t after = key.size() + value.size();
  if (held_bytes_ - before + after > kMaxHeldBytes) return false;
  held_bytes_ = held_bytes_ - before + after;
  kv_[key] = std::move(value);
  return true;
}

void TcpStoreServer::Impl::stop_waiting(uint64_t id, const std::string& key) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.dead) return;
  auto& w = it->second.waiting_on;
  w.erase(std::remove(w.begin(), w.end(), key), w.end());
  if (w.empty()) reply(it->second, std::string(1, static_cast<char>(tcpstore::kStopWaiting)));
}

void TcpStoreServer::Impl::wake_all(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  const std::vector<uint64_t> ids = std::move(it->second);
  waiters_.erase(it);
  for (uint64_t id : ids) stop_waiting(id, key);
}

// A queue item is for one waiter: the first one waiting for it.
void TcpStoreServer::Impl::wake_one(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  const uint64_t id = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty()) waiters_.erase(it);
  stop_waiting(id, key);
}

void TcpStoreServer::Impl::clear_wait(uint64_t id, Connection& c) {
  for (const auto& k : c.waiting_on) {
    auto it = waiters_.find(k);
    if (it == waiters_.end()) continue;
    it->second.erase(std::remove(it->second.begin(), it->second.end(), id), it->second.end());
    if (it->second.empty()) waiters_.erase(it);
  }
  c.waiting_on.clear();
}

void TcpStoreServer::Impl::reply(Connection& c, const std::string& bytes) {
  if (c.dead || bytes.empty()) return;
  if (c.pending_reply() + bytes.size() > kMaxPendingReply) {  // it does not read its replies
    drop(c);
    return;
  }
  c.out += bytes;
  flush(c);
}

void TcpStoreServer::Impl::flush(Connection& c) {
  while (c.pending_reply() > 0) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_off, c.pending_reply(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out_off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      drop(c);
      break;
    }
  }
  if (c.out_off == c.out.size()) {
    c.out.clear();
    c.out_off = 0;
  } else if (c.out_off >= kReadChunk) {
    c.out.erase(0, c.out_off);
    c.out_off = 0;
  }
}

// Marked here; the loop forgets its waits and closes it once nothing
// refers to it any more.
void TcpStoreServer::Impl::drop(Connection& c) { c.dead = true; }

namespace {

// A listening socket on every address at `port`: IPv6 with IPv4 mapped,
// or IPv4 alone where the host has no IPv6 (torch's server does the same).
Result<os::UniqueFd> listen_on_every_address(uint16_t port) {
  int last_errno = 0;
  for (int family : {AF_INET6, AF_INET}) {
    os::UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last_errno = errno;
      continue;
    }
    const int one = 1, zero = 0;
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // a restart within TIME_WAIT
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(port);
      len = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(port);
      len = sizeof *a;
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0 && ::listen(fd.get(), SOMAXCONN) == 0) {
      return fd;
    }
    last_errno = errno;
    if (last_errno == EADDRINUSE) break;  // taken for IPv4 too
  }
  return make_sys_error(last_errno, "cannot listen for TCPStore clients on port " + std::to_string(port),
                        MLOS_ERR_IO);
}

uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::listen(uint16_t port) {
  auto fd = listen_on_every_address(port);
  if (!fd) return fd.error();
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return make_sys_error(errno, "cannot create the TCPStore server's wake-up pipe");
  }
  const uint16_t bound = bound_port(fd->get());
  auto impl = std::make_unique<Impl>(std::move(*fd), bound, os::UniqueFd(wake[0]), os::UniqueFd(wake[1]));
  impl->start();
  return std::unique_ptr<TcpStoreServer>(new TcpStoreServer(std::move(impl)));
}

TcpStoreServer::TcpStoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TcpStoreServer::~TcpStoreServer() = default;
uint16_t TcpStoreServer::port() const { return impl_->port(); }

}  // namespace mlos::collectives
