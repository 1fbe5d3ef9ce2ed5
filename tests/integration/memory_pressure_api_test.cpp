// SPDX-License-Identifier: Apache-2.0
// The memory-pressure API on the real kernel, in this process: figures
// that match /proc and the job's budget, a callback for a job whose own
// allocation eats its memory_bytes, the environment's thresholds, notes.
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

// Sanitizers add shadow memory to every allocation, and it counts in
// RssAnon, so a job's own footprint is not what the test allocates.
#if defined(__SANITIZE_ADDRESS__) || defined(MLOS_TEST_UNDER_ASAN) || defined(__SANITIZE_THREAD__)
constexpr bool kRssIsExact = false;
#else
constexpr bool kRssIsExact = true;
#endif

// Releases a handle however the test ends, so no callback outlives the
// test's locals.
struct Released {
  mlos_training_resources_t* res;
  ~Released() { mlos_training_release_resources(res); }
};

uint64_t rss_anon_bytes() {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long kb = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (sscanf(line, "RssAnon: %llu kB", &kb) == 1) break;
  }
  if (f) fclose(f);
  return kb * 1024;
}

mlos_training_resources_t* request(size_t memory_bytes) {
  mlos_training_resource_request_t req = {};
  req.num_cpus = 1;
  req.memory_bytes = memory_bytes;
  req.numa_node_preference = -1;
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  return res;
}

struct Seen {
  std::atomic<int> level{-1};
  std::atomic<int> calls{0};
  std::atomic<uint32_t> source{0};
};

void on_level(mlos_memory_pressure_level_t level, const mlos_memory_pressure_info_t* info, void* user) {
  auto* s = static_cast<Seen*>(user);
  s->level = level;
  s->source = info->source;
  ++s->calls;
}

bool wait_level(const Seen& s, int level) {
  for (int i = 0; i < 500 && s.level.load() != level; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return s.level.load() == level;
}

TEST(MemoryPressureApi, FiguresAreThoseOfTheTightestSource) {
  auto* res = request(0);
  mlos_memory_pressure_info_t info = {};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_training_get_memory_pressure(res, &info), MLOS_OK) << mlos_last_error_message();
  EXPECT_GT(info.budget_bytes, 0u);
  EXPECT_LE(info.available_bytes, info.budget_bytes);
  EXPECT_NE(info.source, static_cast<uint32_t>(MLOS_MEMORY_SOURCE_NONE));
  // An old caller's struct (the published five fields) gets only those.
  struct {
    mlos_memory_pressure_info_t head;
  } old = {};
  old.head.struct_size = offsetof(mlos_memory_pressure_info_t, psi_full_avg10);
  old.head.sequence = 77;
  ASSERT_EQ(mlos_training_get_memory_pressure(res, &old.head), MLOS_OK);
  EXPECT_EQ(old.head.sequence, 77u);
  EXPECT_EQ(old.head.budget_bytes, info.budget_bytes);
  mlos_training_release_resources(res);
}

TEST(MemoryPressureApi, AJobEatingItsOwnBudgetHearsModerateThenCriticalThenNormal) {
  if (!kRssIsExact) GTEST_SKIP() << "sanitizer shadow memory counts in RssAnon";
  // The job declares what it holds now plus 64 MiB; it then takes 56 MiB
  // more (12 % headroom), then 62 MiB (3 %), then frees it all.
  const size_t budget = rss_anon_bytes() + (64u << 20);
  auto* res = request(budget);
  Released guard{res};
  mlos_memory_thresholds_t t = {};
  t.struct_size = sizeof t;
  t.moderate_headroom_percent = 20;
  t.critical_headroom_percent = 8;
  t.moderate_psi_some = 0;  // this test is about the budget only
  t.critical_psi_full = 0;
  t.hysteresis_percent = 5;
  t.hold_ms = 200;
  t.sample_ms = 20;
  ASSERT_EQ(mlos_training_set_memory_thresholds(res, &t), MLOS_OK) << mlos_last_error_message();
  Seen seen;
  ASSERT_EQ(mlos_training_register_memory_callback(res, on_level, &seen), MLOS_OK) << mlos_last_error_message();

  const size_t big = 62u << 20;
  char* p = static_cast<char*>(mmap(nullptr, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, 56u << 20);
  ASSERT_TRUE(wait_level(seen, MLOS_MEMORY_PRESSURE_MODERATE)) << "level " << seen.level.load();
  EXPECT_EQ(seen.source.load(), static_cast<uint32_t>(MLOS_MEMORY_SOURCE_JOB));
  std::memset(p, 1, big);
  ASSERT_TRUE(wait_level(seen, MLOS_MEMORY_PRESSURE_CRITICAL)) << "level " << seen.level.load();
  munmap(p, big);
  ASSERT_TRUE(wait_level(seen, MLOS_MEMORY_PRESSURE_NORMAL)) << "level " << seen.level.load();
  EXPECT_EQ(seen.calls.load(), 3);

  mlos_memory_pressure_info_t info = {};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_training_get_memory_pressure(res, &info), MLOS_OK);
  EXPECT_EQ(info.level, MLOS_MEMORY_PRESSURE_NORMAL);
  EXPECT_EQ(info.sequence, 3u);
  EXPECT_GT(info.detected_ns, 0u);
}

// What the callback that releases its own handle saw; the test body checks
// it, since a failure reported from the watcher thread after the test has
// ended would crash gtest.
struct SelfRelease {
  mlos_training_resources_t* res = nullptr;
  std::atomic<int> calls{0};
  std::atomic<int> rc{-1};
  std::string message;  // written before `done`
  std::atomic<bool> done{false};
};

void release_from_callback(mlos_memory_pressure_level_t, const mlos_memory_pressure_info_t*, void* user) {
  auto* s = static_cast<SelfRelease*>(user);
  if (++s->calls > 1) return;
  const int rc = mlos_training_release_resources(s->res);
  if (rc != MLOS_OK) s->message = mlos_last_error_message();
  s->rc = rc;
  s->done = true;
}

TEST(MemoryPressureApi, ACallbackMayReleaseItsOwnHandle) {
  // A budget already overspent: the callback fires at registration.
  static SelfRelease seen;  // outlives the test: the watcher thread may finish after it
  seen.res = request(4096);
  ASSERT_EQ(mlos_training_register_memory_callback(seen.res, release_from_callback, &seen), MLOS_OK);
  for (int i = 0; i < 1000 && !seen.done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(seen.done.load()) << "the callback never released its handle";
  EXPECT_EQ(seen.rc.load(), MLOS_OK) << seen.message;
  EXPECT_EQ(seen.calls.load(), 1);
  mlos_training_placement_t pl = {};
  pl.struct_size = sizeof pl;
  EXPECT_EQ(mlos_training_get_placement(seen.res, &pl), MLOS_ERR_INVALID_HANDLE);
}

TEST(MemoryPressureApi, BadEnvironmentThresholdsAreRefusedByName) {
  auto* res = request(0);
  Released guard{res};
  setenv("MLOS_MEMORY_MODERATE", "twenty", 1);
  Seen seen;
  EXPECT_EQ(mlos_training_register_memory_callback(res, on_level, &seen), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlos_last_error_message()).find("MLOS_MEMORY_MODERATE"), std::string::npos);
  unsetenv("MLOS_MEMORY_MODERATE");
  EXPECT_EQ(mlos_training_register_memory_callback(res, on_level, &seen), MLOS_OK);
}

}  // namespace
