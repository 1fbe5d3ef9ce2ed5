// SPDX-License-Identifier: Apache-2.0
// Input a careless or hostile caller can pass that the type system does not
// rule out: a struct_size larger than the struct, a made-up pthread_t, a
// buffer range that wraps the address space. Each must get its documented
// code and never a write outside the caller's object or a crash. Calls that
// crashed before the fixes run in a forked child, so a regression fails the
// test instead of killing the test binary.
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "integration/child_process.h"

using mlos_test::ChildProcess;

namespace {

mlos_training_resources_t* request() {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  if (mlos_training_request_resources(&req, &res) != MLOS_OK) return nullptr;
  return res;
}

// Runs `body` in a forked child (which requests its own resources: a
// parent's handle is invalid there) and returns the lines it reported,
// then "exit N" (N = -1 if it died of a signal).
std::vector<std::string> in_child(const std::function<void(ChildProcess&, mlos_training_resources_t*)>& body) {
  ChildProcess child(
      [&](ChildProcess& self) {
        mlos_training_resources_t* res = request();
        if (res == nullptr) {
          self.report(std::string("request failed: ") + mlos_last_error_message());
          return 1;
        }
        body(self, res);
        mlos_training_release_resources(res);
        return 0;
      },
      /*linger=*/false);
  std::vector<std::string> lines;
  for (std::string line = child.read_line(); !line.empty(); line = child.read_line()) lines.push_back(line);
  lines.push_back("exit " + std::to_string(child.wait_exit()));
  return lines;
}

// The library's struct T at the start of a buffer whose bytes after it are a
// canary: what get() writes there is visible.
template <class T>
struct Canaried {
  T s;
  unsigned char after[256];
};
constexpr unsigned char kCanary = 0xA5;

// Calls get(res, &buf.s) with struct_size = `claimed` and reports "rc=<rc>
// canary=<intact|overwritten> <field>=<value>".
template <class T, class Get, class Field>
void report_fill(ChildProcess& self, mlos_training_resources_t* res, uint32_t claimed, Get get, Field field) {
  auto* buf = static_cast<Canaried<T>*>(malloc(sizeof(Canaried<T>)));
  memset(buf, kCanary, sizeof *buf);
  buf->s.struct_size = claimed;
  const int rc = get(res, &buf->s);
  bool intact = true;
  for (unsigned char c : buf->after) intact = intact && c == kCanary;
  self.report("rc=" + std::to_string(rc) + " canary=" + (intact ? "intact" : "overwritten") + " " + field(buf->s));
  free(buf);
}

}  // namespace

TEST(ApiHostileInput, OversizedStructSizeNeverWritesPastTheLibrarysStruct) {
  const uint32_t placement_plus = sizeof(mlos_training_placement_t) + 16;
  const uint32_t profile_plus = sizeof(mlos_training_phase_profile_t) + 16;
  auto lines = in_child([&](ChildProcess& self, mlos_training_resources_t* res) {
    auto cpus = [](const mlos_training_placement_t& p) { return "num_cpus=" + std::to_string(p.num_cpus); };
    auto calls = [](const mlos_training_phase_profile_t& p) {
      return "set_phase_calls=" + std::to_string(p.set_phase_calls);
    };
    for (uint32_t claimed : {placement_plus, UINT32_MAX}) {
      report_fill<mlos_training_placement_t>(self, res, claimed, mlos_training_get_placement, cpus);
    }
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
    for (uint32_t claimed : {profile_plus, UINT32_MAX}) {
      report_fill<mlos_training_phase_profile_t>(self, res, claimed, mlos_training_get_phase_profile, calls);
    }
  });
  // The fields the library knows are filled; the canary after them is not
  // touched, whatever struct_size claims.
  const std::vector<std::string> expected = {
      "rc=0 canary=intact num_cpus=1", "rc=0 canary=intact num_cpus=1",
      "rc=0 canary=intact set_phase_calls=1", "rc=0 canary=intact set_phase_calls=1", "exit 0"};
  EXPECT_EQ(lines, expected);
}

TEST(ApiHostileInput, TooSmallStructSizeIsStillVersionMismatch) {
  mlos_training_resources_t* res = request();
  ASSERT_NE(res, nullptr) << mlos_last_error_message();
  Canaried<mlos_training_placement_t> pl;
  memset(&pl, kCanary, sizeof pl);
  pl.s.struct_size = offsetof(mlos_training_placement_t, num_cpus);
  EXPECT_EQ(mlos_training_get_placement(res, &pl.s), MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(pl.s.num_cpus, static_cast<int>(0xA5A5A5A5u));  // nothing written
  mlos_training_phase_profile_t prof;
  memset(&prof, kCanary, sizeof prof);
  prof.struct_size = sizeof(uint32_t);
  EXPECT_EQ(mlos_training_get_phase_profile(res, &prof), MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(prof.set_phase_calls, 0xA5A5A5A5A5A5A5A5ull);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(ApiHostileInput, MadeUpAndJoinedThreadsAreNoSuchThread) {
  auto lines = in_child([&](ChildProcess& self, mlos_training_resources_t* res) {
    // Mapped memory of garbage, and garbage whose first word points to
    // itself as a real x86 thread descriptor's does.
    std::vector<unsigned char> garbage(8192, kCanary);
    std::vector<unsigned char> self_pointing(8192, kCanary);
    void* p = self_pointing.data();
    memcpy(self_pointing.data(), &p, sizeof p);
    pthread_t joined{};
    if (pthread_create(&joined, nullptr, [](void*) -> void* { return nullptr; }, nullptr) != 0) {
      self.report("pthread_create failed");
      return;
    }
    pthread_join(joined, nullptr);
    const std::vector<std::pair<const char*, pthread_t>> cases = {
        {"unmapped", static_cast<pthread_t>(0x1234)},
        {"top-of-address-space", static_cast<pthread_t>(UINTPTR_MAX - 3)},
        {"heap-garbage", reinterpret_cast<pthread_t>(garbage.data())},
        {"self-pointing-garbage", reinterpret_cast<pthread_t>(self_pointing.data())},
        {"joined", joined}};
    for (const auto& [name, t] : cases) {
      self.report(std::string(name) + " " + mlos_strerror(mlos_training_bind_thread(res, t, MLOS_CPU_INDEX_ALL)));
    }
  });
  const std::string no_such = mlos_strerror(MLOS_ERR_NO_SUCH_THREAD);
  const std::vector<std::string> expected = {"unmapped " + no_such, "top-of-address-space " + no_such,
                                             "heap-garbage " + no_such, "self-pointing-garbage " + no_such,
                                             "joined " + no_such, "exit 0"};
  EXPECT_EQ(lines, expected);
}

TEST(ApiHostileInput, LiveThreadsStillResolveAfterTheChecks) {
  mlos_training_resources_t* res = request();
  ASSERT_NE(res, nullptr) << mlos_last_error_message();
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  pthread_t other{};
  ASSERT_EQ(pthread_create(
                &other, nullptr,
                [](void* m) -> void* {
                  pthread_mutex_lock(static_cast<pthread_mutex_t*>(m));  // parked until the test is done
                  pthread_mutex_unlock(static_cast<pthread_mutex_t*>(m));
                  return nullptr;
                },
                &mu),
            0);
  EXPECT_EQ(mlos_training_bind_thread(res, other, 0), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(mlos_training_bind_thread(res, pthread_self(), 0), MLOS_OK) << mlos_last_error_message();
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  ASSERT_EQ(mlos_training_get_placement(res, &pl), MLOS_OK);
  EXPECT_EQ(pl.bound_threads, 2);
  pthread_mutex_unlock(&mu);
  pthread_join(other, nullptr);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(ApiHostileInput, BufferRangesThatWrapTheAddressSpaceAreRefused) {
  auto lines = in_child([&](ChildProcess& self, mlos_training_resources_t* res) {
    static char real[64];
    const std::vector<std::pair<const char*, std::pair<uintptr_t, size_t>>> cases = {
        {"wraps", {UINTPTR_MAX - 4095, 8192}},                          // addr + size overflows
        {"size-max", {reinterpret_cast<uintptr_t>(real), SIZE_MAX}},    // from a real buffer
        {"last-page", {UINTPTR_MAX - 100, 50}}};                        // rounding the end up overflows
    for (const auto& [name, range] : cases) {
      void* addr = reinterpret_cast<void*>(range.first);
      const int rc = mlos_training_register_buffer(res, addr, range.second, MLOS_BUFFER_GRADIENT);
      const bool says_why = std::string(mlos_last_error_message()).find("wraps") != std::string::npos;
      // Nothing was registered: unregistering it finds nothing.
      const int unreg = mlos_training_unregister_buffer(res, addr);
      self.report(std::string(name) + " " + mlos_strerror(rc) + (says_why ? " (says why)" : "") + ", unregister " +
                  mlos_strerror(unreg));
    }
    self.report(std::string("real ") + mlos_strerror(mlos_training_register_buffer(res, real, sizeof real,
                                                                                     MLOS_BUFFER_GRADIENT)));
  });
  const std::string refused = std::string(mlos_strerror(MLOS_ERR_INVALID_ARGUMENT)) + " (says why), unregister " +
                              mlos_strerror(MLOS_ERR_INVALID_ARGUMENT);
  const std::vector<std::string> expected = {"wraps " + refused, "size-max " + refused, "last-page " + refused,
                                             std::string("real ") + mlos_strerror(MLOS_OK), "exit 0"};
  EXPECT_EQ(lines, expected);
}
