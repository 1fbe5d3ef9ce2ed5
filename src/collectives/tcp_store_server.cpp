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
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/tcp_store.h"
#include "collectives/tcp_store_frame.h"
#include "collectives/tcp_store_listen.h"
#include "collectives/tcp_store_memory.h"
#include "collectives/tcp_store_reply_queue.h"
#include "collectives/tcp_store_waits.h"
#include "os/log_sink.h"
#include "os/unique_fd.h"

namespace mlos::collectives {

namespace {

using tcpstore::Query;
using Clock = std::chrono::steady_clock;

// A connection whose replies pile up this far is not read from until it
// reads them.
constexpr size_t kPauseReadingAt = 4u << 20;
// The bytes of its own (not stored values) a connection's replies may take.
constexpr size_t kMaxOwnReply = 64u << 20;
// Checked free before own reply bytes are added: a part's record and the
// growth of its string.
constexpr size_t kReplyMargin = 128u << 10;
constexpr size_t kReadChunk = 64u << 10;
constexpr size_t kMaxReadPerRound = 1u << 20;  // then other connections get their turn
// A connection between requests keeps an input buffer of at most this.
constexpr size_t kKeepInput = 64u << 10;

// Reads the fields of one whole request (the frame scan, tcp_store_frame.h,
// has checked its layout and limits; if it ever disagrees, `ok()` is false
// and the request is refused).
class Cursor {
 public:
  Cursor(const char* p, size_t n) : p_(p), n_(n) {}

  template <class T>
  T value() {
    T v{};
    if (!take(sizeof v)) return v;
    std::memcpy(&v, p_ + pos_ - sizeof v, sizeof v);
    return v;
  }
  std::string bytes() {
    const auto len = value<uint64_t>();
    if (!take(len)) return {};
    return std::string(p_ + pos_ - len, len);
  }
  std::vector<std::string> keys() {
    std::vector<std::string> out(static_cast<size_t>(std::min<uint64_t>(value<uint64_t>(), n_)));
    for (auto& k : out) k = bytes();
    return out;
  }
  // Nothing read past the end so far.
  bool good() const { return ok_; }
  // Read to the end exactly, and no further.
  bool ok() const { return ok_ && pos_ == n_; }

 private:
  bool take(uint64_t k) {
    if (!ok_ || n_ - pos_ < k) return ok_ = false;
    pos_ += static_cast<size_t>(k);
    return true;
  }
  const char* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

struct Connection {
  os::UniqueFd fd;
  std::string in;  // received, not yet handled from in_off on
  size_t in_off = 0;
  TcpStoreFrame frame;  // where the request at in_off ends, as far as scanned
  TcpStoreReplyQueue out;
  bool validated = false;
  bool admitted = false;  // validated, and authenticated where a secret is set
  bool mid_request = false;
  bool dead = false;
  // Closed if still unadmitted, or mid-request, at this time.
  Clock::time_point deadline = Clock::time_point::max();
};

template <class T>
std::string raw(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// torch keeps counters (ADD, BARRIER) as decimal text.
bool parse_counter(const std::string& text, int64_t* out) {
  const char* e = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), e, *out);
  return ec == std::errc() && p == e;
}

// Compares without leaking, through timing, how much of the secret matched.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % std::max<size_t>(1, b.size())]);
  return diff == 0;
}

struct AtomicStats {
  std::atomic<size_t> connections{0}, memory{0}, input{0}, values{0}, output{0};
  std::atomic<uint64_t> requests{0}, refused{0}, wait_steps{0}, scan_steps{0};
};

}  // namespace

class TcpStoreServer::Impl {
 public:
  Impl(TcpStoreServerOptions options, StoreListeners listeners, os::UniqueFd wake_read, os::UniqueFd wake_write)
      : options_(std::move(options)),
        listeners_(std::move(listeners)),
        wake_read_(std::move(wake_read)),
        wake_write_(std::move(wake_write)),
        memory_(options_.max_memory_bytes) {}

  ~Impl() {
    if (thread_.joinable()) {
      const char byte = 0;
      while (::write(wake_write_.get(), &byte, 1) < 0 && errno == EINTR) {
      }
      thread_.join();
    }
  }  // the descriptors (connections, listening sockets, pipe) close with their members

  // The thread starts with every signal blocked: the application's
  // handlers run on its own threads, never on this one.
  void start() {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  uint16_t port() const { return listeners_.port; }
  const std::string& where() const { return listeners_.where; }

  Stats stats() const {
    Stats s;
    s.connections = stats_.connections;
    s.memory_bytes = stats_.memory;
    s.input_bytes = stats_.input;
    s.value_bytes = stats_.values;
    s.output_bytes = stats_.output;
    s.requests = stats_.requests;
    s.refused = stats_.refused;
    s.wait_steps = stats_.wait_steps;
    s.scan_steps = stats_.scan_steps;
    return s;
  }

 private:
  void run();
  int poll_timeout_ms(Clock::time_point now) const;
  void accept_all(int listen_fd);
  void read_from(uint64_t id, Connection& c);
  bool take_input(Connection& c, const char* p, size_t n);
  void compact_input(Connection& c);
  void handle_buffered(uint64_t id, Connection& c);
  bool handle_one(uint64_t id, Connection& c, uint8_t q, Cursor& in);
  bool begin_wait(uint64_t id, Connection& c, const std::vector<std::string>& keys);
  bool put(Connection& c, const std::string& own);
  bool put_value(Connection& c, const TcpStoreValue& v);  // its length, then a reference to it
  void flush(Connection& c);
  void refuse(Connection& c);
  void forget(uint64_t id, Connection& c);
  void publish();

  bool present(const std::string& key) const;
  bool store(const std::string& key, std::string value);  // false: past the memory bound
  void wake_all(const std::string& key);
  void wake_one(const std::string& key);
  void stop_waiting(uint64_t id);

  TcpStoreServerOptions options_;
  StoreListeners listeners_;
  os::UniqueFd wake_read_;
  os::UniqueFd wake_write_;
  std::thread thread_;
  AtomicStats stats_;

  // Everything below belongs to the thread. The account outlives every
  // value (they are destroyed before it).
  TcpStoreMemory memory_;
  TcpStoreWaits waits_;
  std::unordered_map<std::string, TcpStoreValue> kv_;
  std::unordered_map<std::string, std::deque<TcpStoreValue>> queues_;
  std::map<uint64_t, Connection> conns_;
  uint64_t next_id_ = 1;
  uint64_t requests_ = 0;
  uint64_t refused_ = 0;
  uint64_t scan_steps_ = 0;
};

void TcpStoreServer::Impl::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  const size_t first_conn = 1 + listeners_.fds.size();
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    for (const auto& l : listeners_.fds) fds.push_back({l.get(), POLLIN, 0});
    for (const auto& [id, c] : conns_) {
      short events = c.out.pending() < kPauseReadingAt ? POLLIN : 0;
      if (c.out.pending() > 0) events |= POLLOUT;
      fds.push_back({c.fd.get(), events, 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), poll_timeout_ms(Clock::now())) < 0) {
      if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ENOMEM: try again
      continue;
    }
    if (fds[0].revents != 0) return;
    for (size_t i = 1; i < first_conn; ++i) {
      if (fds[i].revents != 0) accept_all(fds[i].fd);
    }
    for (size_t i = first_conn; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = conns_.find(ids[i - first_conn]);
      if (it == conns_.end() || it->second.dead) continue;
      Connection& c = it->second;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) read_from(it->first, c);
      if (!c.dead && (fds[i].revents & POLLOUT)) {
        flush(c);
        // Requests held back while replies piled up go on once they drain.
        if (!c.dead && c.out.pending() < kPauseReadingAt && c.in_off < c.in.size()) handle_buffered(it->first, c);
      }
    }
    const auto now = Clock::now();
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (!it->second.dead && it->second.deadline <= now) refuse(it->second);
      if (it->second.dead) {
        forget(it->first, it->second);
        it = conns_.erase(it);  // closes it
      } else {
        ++it;
      }
    }
    publish();
  }
}

int TcpStoreServer::Impl::poll_timeout_ms(Clock::time_point now) const {
  auto next = Clock::time_point::max();
  for (const auto& [id, c] : conns_) next = std::min(next, c.deadline);
  if (next == Clock::time_point::max()) return -1;
  if (next <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::min<long long>(ms, 60000));
}

void TcpStoreServer::Impl::accept_all(int listen_fd) {
  for (;;) {
    os::UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors: the connection stays queued; pause rather than
      // spin on a listening socket that stays readable.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return;
    }
    // Closed at once (the client sees it, instead of a hang) past the
    // connection budget, or when the process nears its descriptor limit
    // (the application may have lowered it since listen()).
    const size_t limit = descriptor_limit();
    if (conns_.size() >= store_connection_budget(limit, options_.max_connections) ||
        static_cast<size_t>(fd.get()) >= store_descriptor_ceiling(limit)) {
      ++refused_;
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Connection& c = conns_[next_id_++];
    c.fd = std::move(fd);
    c.deadline = Clock::now() + options_.validate_within;
    memory_.input(static_cast<ptrdiff_t>(c.in.capacity()));  // an empty string's own (forget() gives it back)
  }
}

void TcpStoreServer::Impl::read_from(uint64_t id, Connection& c) {
  char chunk[kReadChunk];
  for (size_t round = 0; round < kMaxReadPerRound && !c.dead && c.out.pending() < kPauseReadingAt;) {
    const ssize_t n = ::recv(c.fd.get(), chunk, sizeof chunk, 0);
    if (n > 0) {
      if (!take_input(c, chunk, static_cast<size_t>(n))) return refuse(c);
      round += static_cast<size_t>(n);
      handle_buffered(id, c);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    } else {  // closed by the client, or reset
      c.dead = true;
    }
  }
}

// Appends to the connection's input, the buffer growing (by doubling, up
// to the request bound) only within the input and memory bounds.
bool TcpStoreServer::Impl::take_input(Connection& c, const char* p, size_t n) {
  const size_t before = c.in.capacity();
  const size_t want = c.in.size() + n;
  if (want > before) {
    const size_t grown = std::max(want, std::min(2 * before, tcpstore::kMaxRequestBytes + kReadChunk));
    const size_t more = grown - before;
    // Every connection may buffer a small request whatever the others
    // hold (a large one cannot crowd out the rest); beyond that, the
    // input bound applies.
    if (grown > kKeepInput && memory_.input() + more > options_.max_input_bytes) return false;
    if (!memory_.fits(more, waits_.bytes_held())) return false;
    c.in.reserve(grown);
  }
  c.in.append(p, n);
  memory_.input(static_cast<ptrdiff_t>(c.in.capacity() - before));
  return true;
}

// Drops what was handled; a buffer grown for a large request is given back
// once it is handled.
void TcpStoreServer::Impl::compact_input(Connection& c) {
  const size_t before = c.in.capacity();
  if (c.in_off == c.in.size()) {
    c.in.clear();
    if (before > kKeepInput) std::string().swap(c.in);
  } else if (c.in_off >= kReadChunk) {
    c.in.erase(0, c.in_off);
    if (c.in.capacity() > kKeepInput && c.in.capacity() > 4 * c.in.size()) c.in.shrink_to_fit();
  } else {
    return;
  }
  c.in_off = 0;
  memory_.input(static_cast<ptrdiff_t>(c.in.capacity()) - static_cast<ptrdiff_t>(before));
}

void TcpStoreServer::Impl::handle_buffered(uint64_t id, Connection& c) {
  const bool needs_secret = !options_.secret.empty();
  while (!c.dead && c.in_off < c.in.size() && c.out.pending() < kPauseReadingAt) {
    const char* p = c.in.data() + c.in_off;
    const size_t n = c.in.size() - c.in_off;
    const auto q = static_cast<uint8_t>(p[0]);
    // As torch's server: nothing before VALIDATE; then, with a secret,
    // nothing before it.
    if (!c.validated && q != static_cast<uint8_t>(Query::kValidate)) return refuse(c);
    if (c.validated && !c.admitted && needs_secret && q != static_cast<uint8_t>(Query::kMlosAuth)) return refuse(c);
    const uint64_t steps = c.frame.steps();
    const auto state = c.frame.scan(p, n);
    scan_steps_ += c.frame.steps() - steps;
    if (state == TcpStoreFrame::State::kRefused) return refuse(c);
    if (state == TcpStoreFrame::State::kPartial) {
      if (!c.mid_request && c.admitted) c.deadline = Clock::now() + options_.request_within;
      c.mid_request = true;
      break;
    }
    const size_t len = c.frame.bytes();
    c.frame.reset();
    Cursor in(p + 1, len - 1);
    if (!handle_one(id, c, q, in) || !in.ok()) return refuse(c);
    c.in_off += len;
    ++requests_;
    c.mid_request = false;
    if (c.admitted) c.deadline = Clock::time_point::max();
  }
  if (!c.dead) compact_input(c);
}

// One whole request. False: refused (the connection is closed).
bool TcpStoreServer::Impl::handle_one(uint64_t id, Connection& c, uint8_t q, Cursor& in) {
  switch (static_cast<Query>(q)) {
    case Query::kValidate:  // as torch's server: the magic number, once
      if (c.validated || in.value<uint32_t>() != tcpstore::kValidationMagic) return false;
      c.validated = true;
      c.admitted = options_.secret.empty();
      return true;
    case Query::kMlosAuth: {
      const std::string secret = in.bytes();
      if (options_.secret.empty()) return put(c, std::string(1, static_cast<char>(tcpstore::kAuthNotAsked)));
      if (c.admitted || !same_secret(secret, options_.secret)) return false;
      c.admitted = true;
      return put(c, std::string(1, static_cast<char>(tcpstore::kAuthAccepted)));
    }
    case Query::kPing:
      return put(c, raw(in.value<uint32_t>()));
    case Query::kSet:
    case Query::kAppend: {
      const std::string key = in.bytes();
      std::string value = in.bytes();
      if (static_cast<Query>(q) == Query::kAppend) {
        auto it = kv_.find(key);
        if (it != kv_.end()) value = *it->second + value;
      }
      if (!store(key, std::move(value))) return false;
      wake_all(key);
      return true;
    }
    case Query::kQueuePush: {
      const std::string key = in.bytes();
      std::string value = in.bytes();
      const bool fresh = queues_.count(key) == 0;
      const size_t key_cost = fresh ? key.size() + TcpStoreMemory::kEntryCost : 0;
      if (!memory_.fits(value.size() + TcpStoreMemory::kEntryCost + key_cost, waits_.bytes_held())) return false;
      memory_.keys(static_cast<ptrdiff_t>(key_cost));
      queues_[key].push_back(memory_.make_value(std::move(value)));
      wake_one(key);
      return true;
    }
    case Query::kCompareSet: {
      const std::string key = in.bytes();
      const std::string expected = in.bytes();
      std::string desired = in.bytes();
      auto it = kv_.find(key);
      if (it == kv_.end() && !expected.empty()) {  // torch answers the expected value when the key is absent
        return put(c, raw<uint64_t>(expected.size())) && put(c, expected);
      }
      if (it == kv_.end() || *it->second == expected) {
        if (!store(key, std::move(desired))) return false;
        wake_all(key);
      }
      return put_value(c, kv_.at(key));
    }
    case Query::kGet: {
      auto it = kv_.find(in.bytes());
      return it == kv_.end() ? put(c, raw<uint64_t>(0)) : put_value(c, it->second);
    }
    case Query::kAdd:
    case Query::kBarrier: {
      const std::string key = in.bytes();
      const auto n = in.value<int64_t>();
      const bool barrier = static_cast<Query>(q) == Query::kBarrier;
      if (barrier && waits_.waiting(id) > 0) return false;  // one wait at a time
      auto it = kv_.find(key);
      int64_t now = 0;
      // A value that is not a number, or a sum that overflows: refused, as
      // torch's server refuses what std::stoll cannot read.
      if (it != kv_.end() && !parse_counter(*it->second, &now)) return false;
      if (__builtin_add_overflow(now, barrier ? 1 : n, &now)) return false;
      if (!store(key, std::to_string(now))) return false;
      if (!barrier) {
        wake_all(key);
        return put(c, raw<int64_t>(now));
      }
      if (now >= n) {  // the last one in: everyone goes
        wake_all(key);
        return put(c, std::string(1, static_cast<char>(tcpstore::kStopWaiting)));
      }
      if (!memory_.fits(TcpStoreWaits::cost(key), waits_.bytes_held())) return false;
      waits_.add(id, key);
      return true;
    }
    case Query::kCheck: {
      bool all = true;
      for (const auto& k : in.keys()) all = all && present(k);
      return put(c, std::string(1, static_cast<char>(all ? tcpstore::kReady : tcpstore::kNotReady)));
    }
    case Query::kWait:
      return begin_wait(id, c, in.keys());
    case Query::kGetNumKeys:
      return put(c, raw<int64_t>(static_cast<int64_t>(kv_.size())));
    case Query::kDeleteKey: {
      auto it = kv_.find(in.bytes());
      if (it == kv_.end()) return put(c, raw<int64_t>(0));
      memory_.keys(-static_cast<ptrdiff_t>(it->first.size() + TcpStoreMemory::kEntryCost));
      kv_.erase(it);  // the value itself goes once no reply refers to it
      return put(c, raw<int64_t>(1));
    }
    case Query::kMultiGet: {
      for (const auto& k : in.keys()) {
        auto it = kv_.find(k);
        if (!(it == kv_.end() ? put(c, raw<uint64_t>(0)) : put_value(c, it->second))) return false;
      }
      return true;
    }
    case Query::kMultiSet: {
      const auto n = in.value<uint64_t>();
      for (uint64_t i = 0; i < n && in.good(); ++i) {
        const std::string key = in.bytes();
        if (!store(key, in.bytes())) return false;
        wake_all(key);
      }
      return true;
    }
    case Query::kCancelWait:
      waits_.forget(id);
      return put(c, std::string(1, static_cast<char>(tcpstore::kWaitCanceled)));
    case Query::kQueuePop:
    case Query::kQueueLen: {
      const std::string key = in.bytes();
      auto it = queues_.find(key);
      const size_t len = it == queues_.end() ? 0 : it->second.size();
      if (!put(c, raw<int64_t>(static_cast<int64_t>(len)))) return false;
      if (static_cast<Query>(q) == Query::kQueueLen || len == 0) return true;
      const TcpStoreValue front = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) {
        memory_.keys(-static_cast<ptrdiff_t>(key.size() + TcpStoreMemory::kEntryCost));
        queues_.erase(it);
      }
      return put_value(c, front);
    }
    case Query::kListKeys: {
      if (!put(c, raw<int64_t>(static_cast<int64_t>(kv_.size())))) return false;
      for (const auto& kv : kv_) {
        if (!put(c, raw<uint64_t>(kv.first.size())) || !put(c, kv.first)) return false;
      }
      return true;
    }
  }
  return false;  // a query this server does not know (the frame scan refuses it first)
}

// Distinct keys not there yet are recorded; the reply comes when the last
// of them is set (or at once when none is missing).
bool TcpStoreServer::Impl::begin_wait(uint64_t id, Connection& c, const std::vector<std::string>& keys) {
  if (waits_.waiting(id) > 0) return false;  // torch's client never waits twice at once
  for (const auto& k : keys) {
    if (present(k)) continue;
    if (!memory_.fits(TcpStoreWaits::cost(k), waits_.bytes_held())) return false;
    waits_.add(id, k);
  }
  if (waits_.waiting(id) == 0) return put(c, std::string(1, static_cast<char>(tcpstore::kStopWaiting)));
  return true;
}

bool TcpStoreServer::Impl::present(const std::string& key) const {
  if (kv_.count(key) != 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

bool TcpStoreServer::Impl::store(const std::string& key, std::string value) {
  auto it = kv_.find(key);
  const size_t key_cost = it == kv_.end() ? key.size() + TcpStoreMemory::kEntryCost : 0;
  // The old value is freed now unless a reply still refers to it.
  const size_t freed = it != kv_.end() && it->second.use_count() == 1 ? it->second->size() + TcpStoreMemory::kEntryCost : 0;
  const size_t added = key_cost + value.size() + TcpStoreMemory::kEntryCost;
  if (memory_.total(waits_.bytes_held()) + added > memory_.limit() + freed) return false;
  memory_.keys(static_cast<ptrdiff_t>(key_cost));
  kv_[key] = memory_.make_value(std::move(value));
  return true;
}

void TcpStoreServer::Impl::stop_waiting(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.dead) return;
  if (!put(it->second, std::string(1, static_cast<char>(tcpstore::kStopWaiting)))) return refuse(it->second);
  flush(it->second);
}

void TcpStoreServer::Impl::wake_all(const std::string& key) {
  for (uint64_t id : waits_.wake_all(key)) stop_waiting(id);
}

// A queue item is for one waiter: the first one waiting for it.
void TcpStoreServer::Impl::wake_one(const std::string& key) {
  if (const uint64_t id = waits_.wake_first(key)) stop_waiting(id);
}

bool TcpStoreServer::Impl::put(Connection& c, const std::string& own) {
  if (c.dead) return false;
  const size_t before = c.out.own_bytes();
  if (before + own.size() > kMaxOwnReply || !memory_.fits(own.size() + kReplyMargin, waits_.bytes_held())) {
    return false;
  }
  c.out.append(own.data(), own.size());
  memory_.output(static_cast<ptrdiff_t>(c.out.own_bytes() - before));
  return true;
}

bool TcpStoreServer::Impl::put_value(Connection& c, const TcpStoreValue& v) {
  if (!put(c, raw<uint64_t>(v->size()))) return false;
  const size_t before = c.out.own_bytes();
  c.out.append(v);
  memory_.output(static_cast<ptrdiff_t>(c.out.own_bytes() - before));
  return true;
}

void TcpStoreServer::Impl::flush(Connection& c) {
  const size_t before = c.out.own_bytes();
  if (c.out.send_to(c.fd.get()) == TcpStoreReplyQueue::Sent::kFailed) c.dead = true;
  memory_.output(static_cast<ptrdiff_t>(c.out.own_bytes()) - static_cast<ptrdiff_t>(before));
}

// Marked here; the loop forgets it and closes it once nothing refers to it.
void TcpStoreServer::Impl::refuse(Connection& c) {
  if (c.dead) return;
  c.dead = true;
  ++refused_;
}

void TcpStoreServer::Impl::forget(uint64_t id, Connection& c) {
  waits_.forget(id);
  memory_.input(-static_cast<ptrdiff_t>(c.in.capacity()));
  memory_.output(-static_cast<ptrdiff_t>(c.out.own_bytes()));
}

void TcpStoreServer::Impl::publish() {
  stats_.connections = conns_.size();
  stats_.memory = memory_.total(waits_.bytes_held());
  stats_.input = memory_.input();
  stats_.values = memory_.values();
  stats_.output = memory_.output();
  stats_.requests = requests_;
  stats_.refused = refused_;
  stats_.wait_steps = waits_.steps();
  stats_.scan_steps = scan_steps_;
}

Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::listen(const TcpStoreServerOptions& options) {
  if (!options.secret.empty() &&
      (options.secret.size() < tcpstore::kMinSecretBytes || options.secret.size() > tcpstore::kMaxSecretBytes)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "a store secret takes " + std::to_string(tcpstore::kMinSecretBytes) +
                                                     " to " + std::to_string(tcpstore::kMaxSecretBytes) + " bytes");
  }
  size_t raised_from = 0;
  const size_t limit = raise_descriptor_limit(&raised_from);
  if (raised_from != 0) {
    log_message(MLOS_LOG_INFO, "raised this process's descriptor limit from " + std::to_string(raised_from) + " to " +
                                   std::to_string(limit) + " for the TCPStore server's connections");
  }
  auto listeners = listen_for_store(options.host, options.port);
  if (!listeners) return listeners.error();
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return make_sys_error(errno, "cannot create the TCPStore server's wake-up pipe");
  }
  auto impl = std::make_unique<Impl>(options, std::move(*listeners), os::UniqueFd(wake[0]), os::UniqueFd(wake[1]));
  impl->start();
  return std::unique_ptr<TcpStoreServer>(new TcpStoreServer(std::move(impl)));
}

Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::listen(uint16_t port) {
  TcpStoreServerOptions o;
  o.port = port;
  return listen(o);
}

TcpStoreServer::TcpStoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TcpStoreServer::~TcpStoreServer() = default;
uint16_t TcpStoreServer::port() const { return impl_->port(); }
const std::string& TcpStoreServer::where() const { return impl_->where(); }
TcpStoreServer::Stats TcpStoreServer::stats() const { return impl_->stats(); }

}  // namespace mlos::collectives
