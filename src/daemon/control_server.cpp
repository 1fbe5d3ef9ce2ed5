// SPDX-License-Identifier: Apache-2.0
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

#include "daemon/event_log.h"
#include "daemon/request_handler.h"
#include "os/durable_file.h"
#include "os/log_sink.h"
#include "os/monotonic_clock.h"
#include "os/process_info.h"
#include "os/unix_socket.h"
#include "protocol/daemon_client.h"

namespace mlos::daemon {

using nlohmann::json;

// JobManager hands out poll(2) event bits for epoll.
static_assert(POLLIN == EPOLLIN && POLLPRI == EPOLLPRI);

namespace {

constexpr size_t kMaxQueuedReply = 8 << 20;  // a client that never reads is dropped
constexpr size_t kSweepPerTick = 64;          // owners read from /proc per tick (640/s at 100 ms)
constexpr uint64_t kResyncEveryTicks = 100;   // full pass over the owner pidfds (10 s at 100 ms)

// Tags in epoll_event.data.u64: the kind in the high bits, the fd below.
constexpr uint64_t kListen = 1ull << 40, kClient = 2ull << 40, kTimer = 3ull << 40, kSignal = 4ull << 40,
                   kPidfd = 5ull << 40, kMemory = 6ull << 40, kPolicy = 7ull << 40, kKindMask = 0xffull << 40;

Status watch(int epoll, int fd, uint64_t tag, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag | static_cast<uint32_t>(fd);
  if (epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) != 0) return make_sys_error(errno, "epoll_ctl add");
  return Status::Ok();
}

}  // namespace

ControlServer::ControlServer(const DaemonConfig& config, JobManager& jobs, JobMetrics& metrics, json info)
    : config_(config), jobs_(jobs), metrics_(metrics), info_(std::move(info)), policy_metrics_(*metrics.registry()) {}

ControlServer::~ControlServer() { updater_.reset(); }

Status ControlServer::listen() {
  auto fd = os::listen_unix(config_.socket, config_.socket_mode);
  if (!fd) return fd.error();
  listen_ = std::move(*fd);
  return Status::Ok();
}

json ControlServer::handle(const os::PeerCredentials& peer, const protocol::Request& req, os::UniqueFd fd) {
  metrics_.count_request(req.op);
  RequestContext ctx{info_, [this] { return metrics_.text(); }, clients_.size(), &connections_by_uid_};
  if (gpus_) ctx.gpu_figures = [this] { return gpus_->figures(); };
  json reply = handle_request(jobs_, ctx, peer, req, std::move(fd));
  after_reply(req.op, reply);
  return reply;
}

void ControlServer::after_reply(const std::string& op, const json& reply) {
  if (op == "request" && reply.value("ok", false) && reply.contains("job")) {
    if (auto owner = jobs_.owner_of(reply["job"].get<uint64_t>())) watch_owner(reply["job"].get<uint64_t>(), *owner);
  }
}

void ControlServer::deliver_finished() {
  for (auto done = jobs_.take_finished_replies(); !done.empty(); done = jobs_.take_finished_replies()) {
    for (auto& [token, result] : done) {
      auto p = pending_replies_.find(token);
      if (p == pending_replies_.end()) continue;
      const PendingReply who = p->second;
      pending_replies_.erase(p);
      json reply = result ? json{{"id", who.request_id}, {"ok", true}} : protocol::error_reply(who.request_id, result.error());
      if (result) reply.update(*result);
      after_reply(who.op, reply);
      auto c = clients_.find(who.fd);
      if (c == clients_.end() || c->second->serial != who.serial) continue;  // it hung up meanwhile
      Client& client = *c->second;
      queue_reply(client, reply);
      client.waiting = false;
      serve_frames(client);
      flush(client);
      if (client.closing && client.out.empty()) close_client(who.fd);
    }
  }
  sync_memory_wakeups();
  sync_policy_fds();
}

void ControlServer::queue_reply(Client& c, const json& reply) {
  auto bytes = protocol::encode_frame(protocol::FrameKind::kReply, reply);
  if (!bytes) bytes = protocol::encode_frame(protocol::FrameKind::kReply, protocol::error_reply(reply.value("id", uint64_t{0}), bytes.error()));
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
  ev.events = (c.waiting ? 0u : static_cast<uint32_t>(EPOLLIN)) | EPOLLRDHUP |
              (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.u64 = kClient | static_cast<uint32_t>(c.fd.get());
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void ControlServer::close_client(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  const uint32_t uid = it->second->peer.uid;
  if (--connections_by_uid_[uid] <= 0) connections_by_uid_.erase(uid);
  clients_.erase(it);
  if (!listening_) resume_listening();  // a descriptor was freed
}

namespace {

// Best effort: the reply to a connection about to be closed.
void refuse(int fd, const Error& why) {
  if (auto bytes = protocol::encode_frame(protocol::FrameKind::kReply, protocol::error_reply(0, why))) (void)os::send_all(fd, *bytes);
}

}  // namespace

void ControlServer::shed_connection() {
  if (shed_connections_++ % 1000 == 0) {
    log_message(MLOS_LOG_WARN, "mlosd is out of file descriptors (" + std::to_string(shed_connections_) +
                                   " connections refused so far); raise LimitNOFILE or lower quotas");
  }
  if (reserve_.valid()) {
    reserve_.reset();
    os::UniqueFd fd(accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.valid()) refuse(fd.get(), make_error(MLOS_ERR_DAEMON_UNAVAILABLE, "mlosd is out of file descriptors"));
    fd.reset();
    reserve_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  if (!reserve_.valid() && listening_ && epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listen_.get(), nullptr) == 0) {
    listening_ = false;
  }
}

void ControlServer::resume_listening() {
  if (!reserve_.valid()) reserve_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (reserve_.valid() && watch(epoll_.get(), listen_.get(), kListen, EPOLLIN)) listening_ = true;
}

void ControlServer::accept_clients() {
  // Bounded, so that a flood of connections cannot starve the clients
  // already connected (the listener is level-triggered: the rest wait for
  // the next round).
  for (int round = 0; round < 64 && listening_; ++round) {
    int fd = accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE) {
        shed_connection();
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) log_message(MLOS_LOG_WARN, std::string("accept: ") + strerror(errno));
      return;
    }
    auto c = std::make_unique<Client>();
    c->fd.reset(fd);
    auto peer = os::peer_credentials(fd);
    if (!peer) continue;  // closed by ~Client
    const auto held = connections_by_uid_.find(peer->uid);
    UserHoldings holdings;
    holdings.connections = held == connections_by_uid_.end() ? 0 : held->second;
    if (Status s = check_connection_quota(jobs_.quotas(), peer->uid, holdings, static_cast<int>(clients_.size()),
                                          config_.max_clients);
        !s) {
      refuse(fd, s.error());
      continue;
    }
    // The connecting process by pidfd: every later act on the peer goes
    // through it, never through the bare pid, which may be reused.
    auto process = os::ProcessHandle::socket_peer(fd);
    if (!process) {
      refuse(fd, make_sys_error(process.error().sys_errno,
                                "mlosd cannot hold on to the connecting process: " + process.error().describe(),
                                process.error().sys_errno == EMFILE || process.error().sys_errno == ENFILE
                                    ? MLOS_ERR_DAEMON_UNAVAILABLE
                                    : MLOS_ERR_PERMISSION));
      continue;
    }
    c->process = std::move(*process);
    c->peer = *peer;
    c->peer.process = &c->process;
    c->last_active_ns = os::monotonic_ns();
    c->serial = next_client_serial_++;
    if (!watch(epoll_.get(), fd, kClient, EPOLLIN | EPOLLRDHUP)) continue;
    ++connections_by_uid_[peer->uid];
    clients_.emplace(fd, std::move(c));
  }
}

void ControlServer::close_idle_clients(uint64_t now_ns) {
  const uint64_t limit = static_cast<uint64_t>(config_.client_idle_timeout_ms) * 1000000ull;
  std::vector<int> idle;
  for (const auto& [fd, c] : clients_) {
    if (now_ns - c->last_active_ns > limit) idle.push_back(fd);
  }
  for (int fd : idle) close_client(fd);
}

void ControlServer::on_client(int fd, uint32_t events) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  if (events & EPOLLOUT) flush(c);
  if (c.waiting) {
    // Not read until its pending reply is queued (EPOLLIN is off); a
    // hang-up ends it now.
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      c.closing = true;
      c.out.clear();
    }
  } else if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    char buf[16384];
    for (int reads = 0; reads < 16 && !c.closing && !c.waiting; ++reads) {
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
      c.last_active_ns = os::monotonic_ns();
      // At most one descriptor rides with a request: extras are closed.
      while (c.fds.size() > 1) c.fds.pop_back();
      c.decoder.feed(std::string_view(buf, *n));
      serve_frames(c);
    }
    flush(c);
  }
  if (c.closing && c.out.empty()) close_client(fd);
}

void ControlServer::serve_frames(Client& c) {
  while (!c.waiting && !c.closing) {
    auto frame = c.decoder.next();
    if (!frame) {
      metrics_.count_request("malformed");
      queue_reply(c, protocol::error_reply(0, frame.error()));
      c.closing = true;
      break;
    }
    if (!frame->has_value()) break;
    auto req = protocol::parse_request(**frame);
    os::UniqueFd passed;
    if (!c.fds.empty()) {
      passed = std::move(c.fds.front());
      c.fds.clear();
    }
    if (!req) {
      queue_reply(c, protocol::error_reply(0, req.error()));
      continue;
    }
    json reply = handle(c.peer, *req, std::move(passed));
    if (auto token = JobManager::pending_token(reply)) {
      pending_replies_[*token] = PendingReply{c.fd.get(), c.serial, req->id, req->op};
      c.waiting = true;
    } else {
      queue_reply(c, reply);
    }
    sync_memory_wakeups();
    sync_policy_fds();
  }
}

bool ControlServer::watch_owner(uint64_t job, const ProcessId& owner) {
  const OwnerKey key{owner.pid, owner.start_time};
  auto it = owner_watches_.find(key);
  if (it == owner_watches_.end()) {
    // Opened by pid, then checked to be the recorded process: a pid reused
    // since the job was granted is not watched in its place.
    auto handle = os::ProcessHandle::open(owner.pid);
    if (!handle) return false;  // gone (a tick prunes it) or out of descriptors (ticks check it)
    auto id = handle->identity();
    if (!id || id->start_time != owner.start_time || !watch(epoll_.get(), handle->fd(), kPidfd, EPOLLIN)) return false;
    pidfd_owner_[handle->fd()] = key;
    it = owner_watches_.emplace(key, OwnerWatch{std::move(*handle), {}}).first;
  }
  it->second.jobs.insert(job);
  jobs_.set_owner_watched(job, true);
  return true;
}

void ControlServer::sync_owner_watches() {
  // The full pass, on the slow sweep: drops the pidfds of owners that hold
  // no job any more (released, not exited) and retries owners whose pidfd
  // could not be taken. A grant adds its owner at once (watch_owner).
  std::map<OwnerKey, std::vector<uint64_t>> want;
  for (const auto& [job, owner] : jobs_.owners()) want[{owner.pid, owner.start_time}].push_back(job);
  for (auto it = owner_watches_.begin(); it != owner_watches_.end();) {
    if (want.count(it->first)) {
      ++it;
      continue;
    }
    pidfd_owner_.erase(it->second.handle.fd());
    it = owner_watches_.erase(it);  // closing the pidfd takes it out of epoll
  }
  for (const auto& [key, jobs] : want) {
    if (auto it = owner_watches_.find(key); it != owner_watches_.end()) it->second.jobs.clear();
    for (uint64_t job : jobs) {
      if (!watch_owner(job, ProcessId{key.first, key.second})) break;  // no pidfd: the ticks read /proc
    }
  }
}

void ControlServer::owner_exited(int pidfd) {
  auto owner = pidfd_owner_.find(pidfd);
  if (owner == pidfd_owner_.end()) return;
  auto it = owner_watches_.find(owner->second);
  pidfd_owner_.erase(owner);
  if (it == owner_watches_.end()) return;
  // A readable pidfd is proof: every job of that process goes, with one
  // registry write.
  const std::vector<uint64_t> jobs(it->second.jobs.begin(), it->second.jobs.end());
  owner_watches_.erase(it);
  jobs_.owner_exited(jobs);
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

void ControlServer::sync_policy_fds() {
  if (!epoll_.valid()) return;  // not running (a test driving handle())
  // A host's socket leaves epoll by itself when the host is ended (its
  // last descriptor closes); new hosts' sockets are added. A socket number
  // reused within one tick may go unwatched until the next: the ticks poll
  // every host anyway, this only makes replies act at once.
  std::set<int> now;
  for (int fd : jobs_.policy_fds()) {
    now.insert(fd);
    if (policy_fds_.count(fd)) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kPolicy | static_cast<uint32_t>(fd);
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST) {
      (void)epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
    }
  }
  policy_fds_ = std::move(now);
}

void ControlServer::sample(bool metrics_due) {
  // Owners with a pidfd are read from /proc a few per tick (a safety net);
  // the full pass over the owners' pidfds, which also retries those that
  // could not be taken (descriptor limit), is rarer.
  jobs_.tick(kSweepPerTick);
  if (ticks_ % kResyncEveryTicks == 0) sync_owner_watches();
  sync_memory_wakeups();
  sync_policy_fds();
  close_idle_clients(os::monotonic_ns());
  if (!listening_) resume_listening();
  if (!metrics_due) return;
  if (!updater_) updater_ = std::make_unique<MetricsUpdater>(metrics_, [this] { write_textfile(); }, gpus_.get());
  updater_->post(jobs_.samples());
  metrics_.set_clients(static_cast<int>(clients_.size()));
  policy_metrics_.update(jobs_.loaded_policies());
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
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signals_.reset(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signals_.valid()) return make_sys_error(errno, "signalfd");
  reserve_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
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
        deliver_finished();
        if (hooks_.alive) hooks_.alive();
      } else if (kind == kMemory) {
        auto it = memory_wakeups_.find(fd);
        if (it != memory_wakeups_.end()) jobs_.memory_woke(it->second, fd);
      } else if (kind == kPolicy) {
        jobs_.policy_woke();  // a policy host answered: apply what it asked for now
        deliver_finished();
      } else if (kind == kPidfd) {
        owner_exited(fd);
      } else if (kind == kSignal) {
        signalfd_siginfo si;
        if (read(fd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) continue;
        if (si.ssi_signo == SIGHUP) {
          if (hooks_.reload) hooks_.reload();
        } else {
          const std::string why = std::string(strsignal(static_cast<int>(si.ssi_signo))) + ", stopping";
          if (hooks_.stopping) hooks_.stopping(why);
          log_event(MLOS_LOG_INFO, why + "; jobs are kept for the next mlosd", {{"MLOS_EVENT", "stopping"}});
          if (Status s = jobs_.write_snapshot(); !s) {
            log_message(MLOS_LOG_WARN, "registry snapshot at stop: " + s.error().describe() +
                                           " (the journal still holds every change)");
          }
          return Status::Ok();
        }
      }
    }
  }
}

}  // namespace mlos::daemon
