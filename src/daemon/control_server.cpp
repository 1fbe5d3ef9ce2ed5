#include "daemon/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "daemon/daemon_client.h"
#include "daemon/request_handler.h"
#include "os/durable_file.h"
#include "os/log_sink.h"
#include "os/process_info.h"
#include "os/unix_socket.h"

namespace mlos::daemon {

using nlohmann::json;

// JobManager hands out poll(2) event bits for epoll.
static_assert(POLLIN == EPOLLIN && POLLPRI == EPOLLPRI);

namespace {

constexpr size_t kMaxQueuedReply = 8 << 20;  // a client that never reads is dropped

// Tags in epoll_event.data.u64: the kind in the high bits, the fd below.
constexpr uint64_t kListen = 1ull << 40, kClient = 2ull << 40, kTimer = 3ull << 40, kSignal = 4ull << 40,
                   kPidfd = 5ull << 40, kMemory = 6ull << 40, kKindMask = 0xffull << 40;

Status watch(int epoll, int fd, uint64_t tag, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag | static_cast<uint32_t>(fd);
  if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) != 0) return make_sys_error(errno, "epoll_ctl add");
  return Status::Ok();
}

}  // namespace

ControlServer::ControlServer(const DaemonConfig& config, JobManager& jobs, JobMetrics& metrics, json info)
    : config_(config), jobs_(jobs), metrics_(metrics), info_(std::move(info)) {}

ControlServer::~ControlServer() = default;

Status ControlServer::listen() {
  auto fd = os::listen_unix(config_.socket, config_.socket_mode);
  if (!fd) return fd.error();
  listen_ = std::move(*fd);
  return Status::Ok();
}

json ControlServer::handle(const os::PeerCredentials& peer, const Request& req, os::UniqueFd fd) {
  metrics_.count_request(req.op);
  RequestContext ctx{info_, [this] { return metrics_.text(); }, clients_.size()};
  json reply = handle_request(jobs_, ctx, peer, req, std::move(fd));
  if (req.op == "request" && reply.value("ok", false)) sync_owner_watches();
  return reply;
}

void ControlServer::queue_reply(Client& c, const json& reply) {
  auto bytes = encode_frame(FrameKind::kReply, reply);
  if (!bytes) bytes = encode_frame(FrameKind::kReply, error_reply(reply.value("id", uint64_t{0}), bytes.error()));
  if (!bytes) return;
  c.out += *bytes;
  if (c.out.size() > kMaxQueuedReply) c.closing = true, c.out.clear();
}

void ControlServer::flush(Client& c) {
  while (!c.out.empty()) {
    const ssize_t n = send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      c.closing = true;
      c.out.clear();
      break;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.u64 = kClient | static_cast<uint32_t>(c.fd.get());
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void ControlServer::close_client(int fd) { clients_.erase(fd); }

void ControlServer::accept_clients() {
  for (;;) {
    int fd = accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) log_message(MLOS_LOG_WARN, std::string("accept: ") + strerror(errno));
      return;
    }
    auto c = std::make_unique<Client>();
    c->fd.reset(fd);
    auto peer = os::peer_credentials(fd);
    if (!peer || static_cast<int>(clients_.size()) >= config_.max_clients) {
      if (peer) {
        (void)os::send_all(fd, encode_frame(FrameKind::kReply,
                                            error_reply(0, make_error(MLOS_ERR_DAEMON_UNAVAILABLE,
                                                                      "too many clients; try again later")))
                                   .value());
      }
      continue;  // closed by ~Client
    }
    c->peer = *peer;
    if (!watch(epoll_.get(), fd, kClient, EPOLLIN | EPOLLRDHUP)) continue;
    clients_.emplace(fd, std::move(c));
  }
}

void ControlServer::on_client(int fd, uint32_t events) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  if (events & EPOLLOUT) flush(c);
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    char buf[16384];
    for (int reads = 0; reads < 16 && !c.closing; ++reads) {
      auto n = os::recv_some(fd, buf, sizeof buf, &c.fds);
      if (!n) {
        if (n.error().sys_errno == EAGAIN || n.error().sys_errno == EWOULDBLOCK) break;
        c.closing = true;
        c.out.clear();
        break;
      }
      if (*n == 0) {
        c.closing = true;  // peer closed: nothing to reply to
        c.out.clear();
        break;
      }
      // At most one descriptor rides with a request: extras are closed.
      while (c.fds.size() > 1) c.fds.pop_back();
      c.decoder.feed(std::string_view(buf, *n));
      for (;;) {
        auto frame = c.decoder.next();
        if (!frame) {
          metrics_.count_request("malformed");
          queue_reply(c, error_reply(0, frame.error()));
          c.closing = true;
          break;
        }
        if (!frame->has_value()) break;
        auto req = parse_request(**frame);
        os::UniqueFd passed;
        if (!c.fds.empty()) {
          passed = std::move(c.fds.front());
          c.fds.clear();
        }
        if (!req) {
          queue_reply(c, error_reply(0, req.error()));
          continue;
        }
        queue_reply(c, handle(c.peer, *req, std::move(passed)));
        sync_memory_wakeups();
      }
    }
    flush(c);
  }
  if (c.closing && c.out.empty()) close_client(fd);
}

void ControlServer::sync_owner_watches() {
  std::set<uint64_t> live;
  for (const auto& [job, owner] : jobs_.owners()) {
    live.insert(job);
    if (watches_.count(job)) continue;
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, owner.pid, 0));
    if (pidfd < 0) continue;  // gone already (the next tick prunes it) or no pidfd: ticks find it
    os::UniqueFd owned(pidfd);
    // The pid may have been reused before the pidfd was taken.
    if (!os::is_alive(owner) || !watch(epoll_.get(), pidfd, kPidfd, EPOLLIN)) continue;
    pidfd_job_[pidfd] = job;
    watches_.emplace(job, std::move(owned));
  }
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (live.count(it->first)) {
      ++it;
      continue;
    }
    pidfd_job_.erase(it->second.get());
    it = watches_.erase(it);  // closing removes it from epoll
  }
}

void ControlServer::sync_memory_wakeups() {
  if (jobs_.memory_wakeups_version() == memory_wakeups_version_) return;
  memory_wakeups_version_ = jobs_.memory_wakeups_version();
  // JobManager closes a wake-up it no longer wants, which takes it out of
  // epoll; a number reused since is a new file, which ADD accepts (EEXIST
  // means this very file is registered already).
  memory_wakeups_.clear();
  for (const auto& w : jobs_.memory_wakeups()) {
    epoll_event ev{};
    ev.events = w.events;
    ev.data.u64 = kMemory | static_cast<uint32_t>(w.fd);
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, w.fd, &ev) == 0 || errno == EEXIST) memory_wakeups_[w.fd] = w.job;
  }
}

void ControlServer::sample(bool metrics_due) {
  jobs_.tick();
  sync_owner_watches();
  sync_memory_wakeups();
  if (!metrics_due) return;
  metrics_.update(jobs_.samples());
  metrics_.set_clients(static_cast<int>(clients_.size()));
  if (auto text = os::read_whole_file("/proc/pressure/memory"); text && text->has_value()) {
    if (auto t = os::parse_pressure_totals(**text)) metrics_.set_memory_stall(t->some_us / 1e6, t->full_us / 1e6);
  }
  write_textfile();
}

void ControlServer::write_textfile() {
  if (config_.metrics_textfile.empty()) return;
  const auto slash = config_.metrics_textfile.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : config_.metrics_textfile.substr(0, slash);
  if (Status s = os::replace_file_durably(dir, config_.metrics_textfile, metrics_.text()); !s) {
    log_message(MLOS_LOG_WARN, "metrics textfile: " + s.error().describe());
  }
}

Status ControlServer::run() {
  if (!listen_.valid()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "listen() first");
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return make_sys_error(errno, "epoll_create1");
  timer_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_.valid()) return make_sys_error(errno, "timerfd_create");
  const long ms = config_.sample_interval_ms;
  itimerspec its{{ms / 1000, (ms % 1000) * 1000000}, {ms / 1000, (ms % 1000) * 1000000}};
  timerfd_settime(timer_.get(), 0, &its, nullptr);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signals_.reset(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signals_.valid()) return make_sys_error(errno, "signalfd");
  for (auto [fd, tag] : {std::pair{listen_.get(), kListen}, {timer_.get(), kTimer}, {signals_.get(), kSignal}}) {
    if (Status s = watch(epoll_.get(), fd, tag, EPOLLIN); !s) return s;
  }
  sync_owner_watches();
  sample(true);
  const uint64_t metrics_every = std::max(1, config_.metrics_interval_ms / config_.sample_interval_ms);
  epoll_event events[64];
  for (;;) {
    const int n = epoll_wait(epoll_.get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error(errno, "epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t kind = events[i].data.u64 & kKindMask;
      const int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
      if (kind == kListen) {
        accept_clients();
      } else if (kind == kClient) {
        on_client(fd, events[i].events);
      } else if (kind == kTimer) {
        uint64_t expirations;
        if (read(fd, &expirations, sizeof expirations) > 0) sample(++ticks_ % metrics_every == 0);
      } else if (kind == kMemory) {
        auto it = memory_wakeups_.find(fd);
        if (it != memory_wakeups_.end()) jobs_.memory_woke(it->second, fd);
      } else if (kind == kPidfd) {
        auto it = pidfd_job_.find(fd);
        if (it != pidfd_job_.end()) {
          jobs_.owner_exited(it->second);
          sync_owner_watches();
        }
      } else if (kind == kSignal) {
        signalfd_siginfo si;
        if (read(fd, &si, sizeof si) > 0) {
          log_message(MLOS_LOG_INFO, std::string("mlosd: ") + strsignal(static_cast<int>(si.ssi_signo)) +
                                         ", stopping; jobs are kept for the next mlosd");
          return Status::Ok();
        }
      }
    }
  }
}

}  // namespace mlos::daemon
