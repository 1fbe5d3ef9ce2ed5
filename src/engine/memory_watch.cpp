// SPDX-License-Identifier: Apache-2.0
#include "engine/memory_watch.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "os/process_self.h"
#include "os/unique_fd.h"

namespace mlos {

namespace {
// A callback slower than this is reported in the job's notes.
constexpr uint64_t kSlowCallbackNs = 1000000000;
}  // namespace

struct MemoryWatch::State {
  State(std::unique_ptr<PressureFeed> f, Clock c)
      : feed(std::move(f)), clock(c), callbacks(std::move(c), kSlowCallbackNs) {}

  void wake() {
    uint64_t one = 1;
    (void)!write(wake_fd.get(), &one, sizeof one);
  }
  void run();
  Result<PressureReport> sample_locked();

  const pid_t owner_pid = os::self_pid();  // a forked child has no watcher thread
  std::unique_ptr<PressureFeed> feed;  // guarded by mu
  Clock clock;
  MemoryCallbacks callbacks;
  os::UniqueFd wake_fd;
  std::atomic<bool> stopping{false};
  std::thread thread;
  mutable std::mutex mu;
  std::optional<PressureReport> last;  // guarded by mu
  std::string sample_error;            // guarded by mu
};

Result<PressureReport> MemoryWatch::State::sample_locked() {
  auto r = feed->sample(clock());
  if (r) {
    last = *r;
    sample_error.clear();
  } else {
    sample_error = r.error().describe();
  }
  return r;
}

void MemoryWatch::State::run() {
  pthread_setname_np(pthread_self(), "mlos-memwatch");
  while (!stopping.load()) {
    std::vector<pollfd> fds{{wake_fd.get(), POLLIN, 0}};
    int timeout_ms;
    {
      std::lock_guard lock(mu);
      for (const auto& w : feed->fds()) fds.push_back({w.fd, w.events, 0});
      timeout_ms = static_cast<int>(feed->sample_ms());
      // Deliveries a slow callback held up (or a new registrant's) are
      // retried at once.
      if (last && callbacks.behind(last->level)) timeout_ms = 0;
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (stopping.load()) break;
    std::optional<PressureReport> report;
    {
      std::lock_guard lock(mu);
      const uint64_t now = clock();
      if (fds[0].revents & POLLIN) {
        uint64_t n;
        (void)!read(wake_fd.get(), &n, sizeof n);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents & fds[i].events) feed->on_ready(fds[i].fd, now);
      }
      if (auto r = sample_locked()) report = *r;
    }
    if (report) callbacks.deliver(*report);
  }
}

Result<std::shared_ptr<MemoryWatch>> MemoryWatch::start(std::unique_ptr<PressureFeed> feed, Clock clock) {
  auto s = std::make_shared<State>(std::move(feed), std::move(clock));
  s->wake_fd.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->wake_fd.valid()) return make_sys_error(errno, "eventfd for the memory watcher");
  try {
    // The thread shares the state, so a stop() from inside a callback can
    // let it finish after the MemoryWatch itself is gone.
    s->thread = std::thread([s] { s->run(); });
  } catch (const std::system_error& e) {
    return make_sys_error(e.code().value(), "cannot start the memory watcher thread");
  }
  return std::shared_ptr<MemoryWatch>(new MemoryWatch(std::move(s)));
}

MemoryWatch::~MemoryWatch() { stop(); }

Status MemoryWatch::add(mlos_memory_callback_t cb, void* user_data) {
  Status st = s_->callbacks.add(cb, user_data);
  if (st) s_->wake();  // a registrant during pressure hears the level now
  return st;
}

Status MemoryWatch::remove(mlos_memory_callback_t cb, void* user_data) {
  return s_->callbacks.remove(cb, user_data);
}

Status MemoryWatch::set_thresholds(const MemoryThresholds& t) {
  {
    std::lock_guard lock(s_->mu);
    if (Status st = s_->feed->set_thresholds(t); !st) return st;
  }
  s_->wake();
  return Status::Ok();
}

Result<PressureReport> MemoryWatch::current() {
  std::lock_guard lock(s_->mu);
  if (s_->last) return *s_->last;
  return s_->sample_locked();
}

void MemoryWatch::stop() {
  if (s_->stopping.exchange(true)) return;
  if (os::self_pid() != s_->owner_pid) {
    // A forked child dropping its copy: the thread exists only in the
    // parent, and the copied mutexes may be held by it. Touch neither;
    // the thread object is leaked (joining or detaching it is undefined).
    new std::thread(std::move(s_->thread));
    return;
  }
  s_->callbacks.clear();
  s_->wake();
  if (!s_->thread.joinable()) return;
  if (s_->thread.get_id() == std::this_thread::get_id()) {
    s_->thread.detach();
  } else {
    s_->thread.join();
  }
}

std::string MemoryWatch::notes() const {
  std::lock_guard lock(s_->mu);
  std::string out = s_->feed->notes();
  auto add = [&](const std::string& s) {
    if (!s.empty()) out += (out.empty() ? "" : "; ") + s;
  };
  add(s_->sample_error);
  add(s_->callbacks.notes());
  return out;
}

}  // namespace mlos
