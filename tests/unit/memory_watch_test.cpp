// SPDX-License-Identifier: Apache-2.0
// MemoryWatch and MemoryCallbacks over a scripted feed: delivery order,
// late registrants, coalescing behind a slow callback, unregistering from
// inside a callback, exceptions, stop.
#include "engine/memory_watch.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mlos {
namespace {

// A feed whose level the test sets; setting it rings an eventfd.
class ScriptedFeed final : public PressureFeed {
 public:
  struct Shared {
    std::mutex mu;
    mlos_memory_pressure_level_t level = MLOS_MEMORY_PRESSURE_NORMAL;
    uint64_t sequence = 0;
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    void set(mlos_memory_pressure_level_t l) {
      {
        std::lock_guard lock(mu);
        level = l;
        ++sequence;
      }
      uint64_t one = 1;
      (void)!write(efd, &one, sizeof one);
    }
    ~Shared() { close(efd); }
  };
  explicit ScriptedFeed(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  std::vector<WaitFd> fds() const override { return {{s_->efd, POLLIN}}; }
  void on_ready(int fd, uint64_t) override {
    uint64_t n;
    (void)!read(fd, &n, sizeof n);
  }
  Result<PressureReport> sample(uint64_t now) override {
    std::lock_guard lock(s_->mu);
    PressureReport r;
    r.level = s_->level;
    r.sequence = s_->sequence;
    r.detected_ns = now;
    r.figures.consider(100, 1000, MemorySource::kCgroup);
    return r;
  }
  uint32_t sample_ms() const override { return 20; }
  Status set_thresholds(const MemoryThresholds&) override { return Status::Ok(); }
  std::string notes() const override { return ""; }

 private:
  std::shared_ptr<Shared> s_;
};

struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<int, mlos_memory_pressure_level_t>> calls;  // (tag, level)
  void add(int tag, mlos_memory_pressure_level_t level) {
    std::lock_guard lock(mu);
    calls.emplace_back(tag, level);
    cv.notify_all();
  }
  bool wait_for(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return calls.size() >= n; });
  }
};

struct Tagged {
  Recorder* rec;
  int tag;
};

void record(mlos_memory_pressure_level_t level, const mlos_memory_pressure_info_t* info, void* user) {
  auto* t = static_cast<Tagged*>(user);
  EXPECT_EQ(info->level, level);
  EXPECT_EQ(info->budget_bytes, 1000u);
  EXPECT_EQ(info->source, static_cast<uint32_t>(MLOS_MEMORY_SOURCE_CGROUP));
  t->rec->add(t->tag, level);
}

std::shared_ptr<MemoryWatch> start(std::shared_ptr<ScriptedFeed::Shared> s) {
  auto w = MemoryWatch::start(std::make_unique<ScriptedFeed>(s), [] {
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  });
  EXPECT_TRUE(w);
  return *w;
}

TEST(MemoryWatch, DeliversEachChangeToEveryCallbackInRegistrationOrder) {
  auto s = std::make_shared<ScriptedFeed::Shared>();
  auto w = start(s);
  Recorder rec;
  Tagged a{&rec, 1}, b{&rec, 2};
  ASSERT_TRUE(w->add(record, &a));
  ASSERT_TRUE(w->add(record, &b));
  s->set(MLOS_MEMORY_PRESSURE_MODERATE);
  ASSERT_TRUE(rec.wait_for(2));
  s->set(MLOS_MEMORY_PRESSURE_NORMAL);
  ASSERT_TRUE(rec.wait_for(4));
  w->stop();
  using P = std::pair<int, mlos_memory_pressure_level_t>;
  EXPECT_EQ(rec.calls, (std::vector<P>{{1, MLOS_MEMORY_PRESSURE_MODERATE}, {2, MLOS_MEMORY_PRESSURE_MODERATE},
                                       {1, MLOS_MEMORY_PRESSURE_NORMAL}, {2, MLOS_MEMORY_PRESSURE_NORMAL}}));
}

TEST(MemoryWatch, ALateRegistrantHearsTheCurrentLevelAtOnce) {
  auto s = std::make_shared<ScriptedFeed::Shared>();
  auto w = start(s);
  Recorder rec;
  Tagged a{&rec, 1};
  s->set(MLOS_MEMORY_PRESSURE_CRITICAL);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (w->current()->level != MLOS_MEMORY_PRESSURE_CRITICAL && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(w->add(record, &a));
  ASSERT_TRUE(rec.wait_for(1));
  EXPECT_EQ(rec.calls[0].second, MLOS_MEMORY_PRESSURE_CRITICAL);
}

TEST(MemoryWatch, RejectsNullDuplicatesAndTooMany) {
  auto s = std::make_shared<ScriptedFeed::Shared>();
  auto w = start(s);
  Recorder rec;
  std::vector<Tagged> tags(MLOS_MAX_MEMORY_CALLBACKS + 1, Tagged{&rec, 0});
  EXPECT_EQ(w->add(nullptr, nullptr).error().code, MLOS_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < MLOS_MAX_MEMORY_CALLBACKS; ++i) ASSERT_TRUE(w->add(record, &tags[i]));
  EXPECT_EQ(w->add(record, &tags[0]).error().code, MLOS_ERR_INVALID_ARGUMENT);  // duplicate
  EXPECT_EQ(w->add(record, &tags.back()).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(w->remove(record, &tags[0]));
  EXPECT_EQ(w->remove(record, &tags[0]).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(w->add(record, &tags.back()));
}

struct Slow {
  std::atomic<bool> release{false};
  std::atomic<int> calls{0};
  std::vector<mlos_memory_pressure_level_t> levels;
  std::mutex mu;
};

void slow_cb(mlos_memory_pressure_level_t level, const mlos_memory_pressure_info_t*, void* user) {
  auto* s = static_cast<Slow*>(user);
  {
    std::lock_guard lock(s->mu);
    s->levels.push_back(level);
  }
  ++s->calls;
  while (!s->release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(MemoryWatch, ChangesBehindASlowCallbackAreCoalescedToTheLatest) {
  auto s = std::make_shared<ScriptedFeed::Shared>();
  auto w = start(s);
  Slow slow;
  ASSERT_TRUE(w->add(slow_cb, &slow));
  s->set(MLOS_MEMORY_PRESSURE_MODERATE);
  while (slow.calls.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s->set(MLOS_MEMORY_PRESSURE_CRITICAL);  // while the first call is stuck
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s->set(MLOS_MEMORY_PRESSURE_NORMAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  slow.release = true;
  while (slow.calls.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  w->stop();
  std::lock_guard lock(slow.mu);
  // CRITICAL came and went while the callback was busy: skipped, and the
  // latest level (NORMAL) delivered.
  EXPECT_EQ(slow.levels, (std::vector<mlos_memory_pressure_level_t>{MLOS_MEMORY_PRESSURE_MODERATE,
                                                                     MLOS_MEMORY_PRESSURE_NORMAL}));
}

TEST(MemoryWatch, RemoveWaitsForARunningCallback) {
  auto s = std::make_shared<ScriptedFeed::Shared>();
  auto w = start(s);
  Slow slow;
  ASSERT_TRUE(w->add(slow_cb, &slow));
  s->set(MLOS_MEMORY_PRESSURE_MODERATE);
  while (slow.calls.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> removed{false};
  std::thread remover([&] {
    EXPECT_TRUE(w->remove(slow_cb, &slow));
    removed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(removed.load());  // the callback is still running
  slow.release = true;
  remover.join();
  EXPECT_TRUE(removed.load());
  s->set(MLOS_MEMORY_PRESSURE_CRITICAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(slow.calls.load(), 1);  // never called again
}

struct SelfRemoving {
  MemoryWatch* w;
  std::atomic<int> calls{0};
};

void remove_self(mlos_memory_pressure_level_t, const mlos_memory_pressure_info_t*, void* user) {
  auto* s = static_cast<SelfRemoving*>(user);
  ++s->calls;
  EXPECT_TRUE(s->w->remove(remove_self, user));  // must not deadlock
}

void throws(mlos_memory_pressure_level_t, const mlos_memory_pressure_info_t*, void*) {
  throw std::runtime_error("callback failure");
}

TEST(MemoryWatch, ACallbackMayUnregisterItselfAndExceptionsAreNoted) {
  auto s = std::make_shared<ScriptedFeed::Shared>();
  auto w = start(s);
  SelfRemoving self{w.get()};
  Recorder rec;
  Tagged after{&rec, 7};
  ASSERT_TRUE(w->add(throws, nullptr));
  ASSERT_TRUE(w->add(remove_self, &self));
  ASSERT_TRUE(w->add(record, &after));
  s->set(MLOS_MEMORY_PRESSURE_MODERATE);
  ASSERT_TRUE(rec.wait_for(1));  // delivery went on past the throwing one
  s->set(MLOS_MEMORY_PRESSURE_CRITICAL);
  ASSERT_TRUE(rec.wait_for(2));
  EXPECT_EQ(self.calls.load(), 1);
  EXPECT_NE(w->notes().find("callback failure"), std::string::npos) << w->notes();
}

}  // namespace
}  // namespace mlos
