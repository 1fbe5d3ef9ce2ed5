// SPDX-License-Identifier: Apache-2.0
// Tensor pools (include/mlos/tmm.h) against the real kernel: buffers,
// reuse, errors that change nothing, and effects read from outside the
// library (VmLck, get_mempolicy, move_pages, memfd seals, fstat).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <mlos/tmm.h>
#include <mlos/training.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/child_process.h"
#include "integration/job_request.h"
#include "integration/proc_observer.h"

using namespace mlos_test;

namespace {
constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

mlos_tmm_pool_options_t options(uint64_t capacity, uint32_t flags = 0, int node = MLOS_TMM_NODE_AUTO) {
  mlos_tmm_pool_options_t o{};
  o.struct_size = sizeof o;
  o.capacity_bytes = capacity;
  o.flags = flags;
  o.numa_node = node;
  o.name = "test";
  return o;
}

mlos_tmm_pool_t* make_pool(uint64_t capacity, uint32_t flags = 0, int node = MLOS_TMM_NODE_AUTO,
                           mlos_training_resources_t* job = nullptr) {
  const auto o = options(capacity, flags, node);
  mlos_tmm_pool_t* pool = nullptr;
  EXPECT_EQ(mlos_tmm_pool_create(job, &o, &pool), MLOS_OK) << mlos_last_error_message();
  return pool;
}

mlos_tmm_stats_t stats_of(mlos_tmm_pool_t* pool) {
  mlos_tmm_stats_t s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(mlos_tmm_get_stats(pool, &s), MLOS_OK) << mlos_last_error_message();
  return s;
}

mlos_tmm_buffer_t acquire(mlos_tmm_pool_t* pool, size_t size) {
  mlos_tmm_buffer_t b{};
  EXPECT_EQ(mlos_tmm_acquire(pool, size, &b), MLOS_OK) << mlos_last_error_message();
  return b;
}

std::string notes_of(mlos_tmm_pool_t* pool) {
  char buf[1024];
  size_t needed = 0;
  EXPECT_EQ(mlos_tmm_get_notes(pool, buf, sizeof buf, &needed), MLOS_OK) << mlos_last_error_message();
  return buf;
}

// get_mempolicy(MPOL_F_ADDR) of the page at `addr`: mode and node mask.
std::pair<int, unsigned long> policy_at(void* addr) {
  int mode = -1;
  unsigned long mask[16] = {};
  EXPECT_EQ(syscall(SYS_get_mempolicy, &mode, mask, 1024 + 1, addr, MPOL_F_ADDR), 0) << strerror(errno);
  return {mode, mask[0]};
}

// The node of the page at `addr` (move_pages with no target), or -errno.
int node_of_page(void* addr) {
  void* pages[1] = {addr};
  int status[1] = {-1};
  EXPECT_EQ(syscall(SYS_move_pages, 0, 1, pages, nullptr, status, 0), 0) << strerror(errno);
  return status[0];
}

}  // namespace

TEST(TensorPool, BuffersArePageAlignedClassSizedAndReusedByClass) {
  mlos_tmm_pool_t* pool = make_pool(64 * kMiB);
  const mlos_tmm_buffer_t small = acquire(pool, 100);
  EXPECT_EQ(small.capacity, 4 * kKiB);  // a page at least
  const mlos_tmm_buffer_t a = acquire(pool, 3 * kMiB + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % (2 * kMiB), 0u);  // 2 MiB-aligned from 2 MiB up
  EXPECT_EQ(a.size, 3 * kMiB + 1);
  EXPECT_GE(a.capacity, a.size);
  EXPECT_LE(a.capacity, a.size + a.size / 4);
  memset(a.data, 0x5a, a.capacity);  // all of it is usable
  ASSERT_EQ(mlos_tmm_release(pool, a.data), MLOS_OK);
  const mlos_tmm_buffer_t b = acquire(pool, 3 * kMiB + 100);  // same class: the same buffer comes back
  EXPECT_EQ(b.data, a.data);
  EXPECT_EQ(static_cast<unsigned char*>(b.data)[0], 0x5a);  // kept, not cleared
  const mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.acquires, 3u);
  EXPECT_EQ(s.releases, 1u);
  EXPECT_EQ(s.reuse_hits, 1u);
  EXPECT_EQ(s.buffers_in_use, 2u);
  EXPECT_EQ(s.bytes_in_use, 4 * kKiB + b.capacity);
  EXPECT_EQ(s.high_water_bytes, 4 * kKiB + a.capacity);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.capacity_bytes, 64 * kMiB);
}

TEST(TensorPool, OffsetsNameTheSameMemoryInTheArena) {
  mlos_tmm_pool_t* pool = make_pool(8 * kMiB);
  const mlos_tmm_buffer_t a = acquire(pool, 10 * kKiB);
  const mlos_tmm_buffer_t b = acquire(pool, 10 * kKiB);
  EXPECT_EQ(static_cast<char*>(b.data) - static_cast<char*>(a.data),
            static_cast<ptrdiff_t>(b.offset) - static_cast<ptrdiff_t>(a.offset));
  EXPECT_EQ(mlos_tmm_release(pool, a.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, BadReleasesAreRefusedAndChangeNothing) {
  mlos_tmm_pool_t* pool = make_pool(4 * kMiB);
  const mlos_tmm_buffer_t a = acquire(pool, 8 * kKiB);
  int on_stack = 0;
  EXPECT_EQ(mlos_tmm_release(pool, static_cast<char*>(a.data) + 4096), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_release(pool, &on_stack), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_release(pool, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(stats_of(pool).buffers_in_use, 1u);
  EXPECT_EQ(mlos_tmm_release(pool, a.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_release(pool, a.data), MLOS_ERR_INVALID_ARGUMENT);  // twice
  EXPECT_NE(std::string(mlos_last_error_message()).find("released already"), std::string::npos);
  const mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.releases, 1u);
  EXPECT_EQ(s.buffers_in_use, 0u);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, DestroyWithBuffersOutIsBusyAndThePoolStaysUsable) {
  mlos_tmm_pool_t* pool = make_pool(4 * kMiB);
  const mlos_tmm_buffer_t a = acquire(pool, 64 * kKiB);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_ERR_BUSY);
  memset(a.data, 1, a.capacity);  // still mapped
  const mlos_tmm_buffer_t b = acquire(pool, 64 * kKiB);
  EXPECT_EQ(mlos_tmm_release(pool, a.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
  mlos_tmm_buffer_t c{};
  EXPECT_EQ(mlos_tmm_acquire(pool, 1, &c), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_ERR_INVALID_HANDLE);
}

TEST(TensorPool, AFullPoolRefusesThenServesAgainAndFlushesOtherClasses) {
  mlos_tmm_pool_t* pool = make_pool(1 * kMiB);
  std::vector<void*> held;
  for (int i = 0; i < 4; ++i) held.push_back(acquire(pool, 256 * kKiB).data);
  mlos_tmm_buffer_t extra{};
  EXPECT_EQ(mlos_tmm_acquire(pool, 4 * kKiB, &extra), MLOS_ERR_NO_MEMORY);
  EXPECT_NE(std::string(mlos_last_error_message()).find("pool full"), std::string::npos);
  EXPECT_EQ(stats_of(pool).failed_acquires, 1u);
  for (void* p : held) ASSERT_EQ(mlos_tmm_release(pool, p), MLOS_OK);
  EXPECT_EQ(stats_of(pool).bytes_cached, 1 * kMiB);
  // A whole-pool buffer needs the four cached ones merged back.
  const mlos_tmm_buffer_t whole = acquire(pool, 1 * kMiB);
  EXPECT_EQ(whole.capacity, 1 * kMiB);
  EXPECT_EQ(stats_of(pool).bytes_cached, 0u);
  EXPECT_EQ(mlos_tmm_release(pool, whole.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, BadArgumentsGetDocumentedCodes) {
  mlos_tmm_pool_t* pool = nullptr;
  auto o = options(1 * kMiB);
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, nullptr, &pool), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &o, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  auto bad = o;
  bad.capacity_bytes = 0;
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.flags = 1u << 20;
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.reserved = 1;
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.name = "a/b";
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.struct_size = 8;
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_VERSION_MISMATCH);
  bad = o;
  bad.numa_node = -7;
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_INVALID_NUMA_NODE);
  bad = o;
  bad.flags = MLOS_TMM_HUGETLB | MLOS_TMM_PRIVATE;
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &bad, &pool), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pool, nullptr);
  EXPECT_EQ(mlos_tmm_pool_create(reinterpret_cast<mlos_training_resources_t*>(0x1234), &o, &pool),
            MLOS_ERR_INVALID_HANDLE);

  pool = make_pool(1 * kMiB);
  mlos_tmm_buffer_t b{};
  EXPECT_EQ(mlos_tmm_acquire(pool, 0, &b), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_acquire(pool, 2 * kMiB, &b), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_acquire(pool, 1, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_prewarm(pool, 0, 1), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_get_stats(pool, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_tmm_stats_t small{};
  small.struct_size = 4;
  EXPECT_EQ(mlos_tmm_get_stats(pool, &small), MLOS_ERR_VERSION_MISMATCH);
  size_t needed = 0;
  EXPECT_EQ(mlos_tmm_get_notes(pool, nullptr, 0, &needed), MLOS_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, 1u);
  EXPECT_EQ(mlos_tmm_pool_fd(pool, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_pin(pool, &b), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_tmm_acquire(nullptr, 1, &b), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(stats_of(pool).acquires, 0u);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, ALockedPoolShowsInVmLckUntilDestroyed) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  const long before = vm_locked_kb();
  mlos_tmm_pool_t* pool = nullptr;
  const auto o = options(8 * kMiB, MLOS_TMM_LOCKED);
  const int rc = mlos_tmm_pool_create(nullptr, &o, &pool);
  if (rc == MLOS_ERR_LOCK_LIMIT) GTEST_SKIP() << "cannot lock 8 MiB here: " << mlos_last_error_message();
  ASSERT_EQ(rc, MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(vm_locked_kb() - before, 8 * 1024);
  const mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.locked_bytes, 8 * kMiB);
  EXPECT_EQ(s.resident_bytes, 8 * kMiB);  // mlock faults the arena in
  const mlos_tmm_buffer_t b = acquire(pool, 1 * kMiB);
  EXPECT_EQ(mlos_tmm_unpin(pool, b.data), MLOS_ERR_INVALID_ARGUMENT);  // locked as a whole
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
  EXPECT_EQ(vm_locked_kb(), before);
}

TEST(TensorPool, PinLocksOneBufferAndReleaseUnpinsIt) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  mlos_tmm_pool_t* pool = make_pool(16 * kMiB);
  const mlos_tmm_buffer_t a = acquire(pool, 4 * kMiB);
  const mlos_tmm_buffer_t b = acquire(pool, 4 * kMiB);
  const long before = vm_locked_kb();
  const int rc = mlos_tmm_pin(pool, a.data);
  if (rc == MLOS_ERR_LOCK_LIMIT) GTEST_SKIP() << "cannot lock 4 MiB here: " << mlos_last_error_message();
  ASSERT_EQ(rc, MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(vm_locked_kb() - before, 4 * 1024);
  EXPECT_EQ(mlos_tmm_pin(pool, a.data), MLOS_OK);  // again: no change
  EXPECT_EQ(vm_locked_kb() - before, 4 * 1024);
  EXPECT_EQ(stats_of(pool).locked_bytes, 4 * kMiB);
  ASSERT_EQ(mlos_tmm_pin(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_unpin(pool, b.data), MLOS_OK);
  EXPECT_EQ(vm_locked_kb() - before, 4 * 1024);
  EXPECT_EQ(mlos_tmm_release(pool, a.data), MLOS_OK);  // unpins
  EXPECT_EQ(vm_locked_kb(), before);
  EXPECT_EQ(stats_of(pool).locked_bytes, 0u);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, ANodeBindsEveryPageOfTheArena) {
  mlos_tmm_pool_t* pool = make_pool(8 * kMiB, 0, 0);
  const mlos_tmm_buffer_t b = acquire(pool, 1 * kMiB);
  EXPECT_EQ(policy_at(b.data), std::make_pair(int{MPOL_PREFERRED}, 1ul));
  memset(b.data, 1, b.capacity);
  EXPECT_EQ(node_of_page(b.data), 0);
  const mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.numa_node, 0);
  EXPECT_EQ(s.remote_node_pages, 0u);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);

  pool = make_pool(8 * kMiB, MLOS_TMM_STRICT_NODE, 0);
  const mlos_tmm_buffer_t c = acquire(pool, 1 * kMiB);
  EXPECT_EQ(policy_at(c.data), std::make_pair(int{MPOL_BIND}, 1ul));
  EXPECT_EQ(mlos_tmm_release(pool, c.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

// Skipped on one-node machines; runs in the VM test bed (two nodes).
TEST(TensorPool, OnAnotherNodeEveryPageLandsThereAndStatsSaySo) {
  if (access("/sys/devices/system/node/node1", F_OK) != 0) GTEST_SKIP() << "one NUMA node here (tests/vm has two)";
  for (uint32_t flags : {0u, uint32_t{MLOS_TMM_STRICT_NODE}}) {
    mlos_tmm_pool_t* pool = make_pool(8 * kMiB, flags, 1);
    ASSERT_NE(pool, nullptr);
    const mlos_tmm_buffer_t b = acquire(pool, 4 * kMiB);
    EXPECT_EQ(policy_at(b.data), std::make_pair(flags ? int{MPOL_BIND} : int{MPOL_PREFERRED}, 2ul));
    memset(b.data, 1, b.capacity);
    for (size_t off = 0; off < b.capacity; off += 256 * kKiB) {
      EXPECT_EQ(node_of_page(static_cast<char*>(b.data) + off), 1) << "offset " << off << " flags " << flags;
    }
    const mlos_tmm_stats_t s = stats_of(pool);
    EXPECT_EQ(s.numa_node, 1);
    EXPECT_EQ(s.remote_node_pages, 0u);
    EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
    EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
  }
}

TEST(TensorPool, ANodeThatIsNotOnlineIsRefused) {
  mlos_tmm_pool_t* pool = nullptr;
  const auto o = options(1 * kMiB, 0, 1000);
  EXPECT_EQ(mlos_tmm_pool_create(nullptr, &o, &pool), MLOS_ERR_INVALID_NUMA_NODE);
  EXPECT_EQ(pool, nullptr);
}

TEST(TensorPool, AJobsPoolUsesItsNodesAndCountsAgainstItsMemory) {
  mlos_training_resources_t* job = request_test_job(8 * kMiB);
  ASSERT_NE(job, nullptr);
  mlos_tmm_pool_t* first = make_pool(5 * kMiB, 0, MLOS_TMM_NODE_AUTO, job);
  ASSERT_NE(first, nullptr);
  const mlos_tmm_buffer_t b = acquire(first, 64 * kKiB);
  EXPECT_EQ(policy_at(b.data).first, MPOL_PREFERRED);  // the job's default memory policy
  mlos_tmm_pool_t* second = nullptr;
  const auto o = options(4 * kMiB);
  EXPECT_EQ(mlos_tmm_pool_create(job, &o, &second), MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_NE(std::string(mlos_last_error_message()).find("tensor pool"), std::string::npos);
  // The checkpoint buffers share the budget.
  EXPECT_EQ(mlos_training_alloc_checkpoint_buffer(job, 4 * kMiB), nullptr);
  EXPECT_EQ(mlos_training_release_resources(job), MLOS_OK);
  // The pool outlives the job's release.
  memset(b.data, 3, b.capacity);
  EXPECT_EQ(mlos_tmm_release(first, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(first), MLOS_OK);

  job = request_test_job(8 * kMiB);
  first = make_pool(5 * kMiB, 0, MLOS_TMM_NODE_AUTO, job);
  ASSERT_EQ(mlos_tmm_pool_destroy(first), MLOS_OK);  // gives its 5 MiB back
  ASSERT_EQ(mlos_tmm_pool_create(job, &o, &second), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(mlos_tmm_pool_destroy(second), MLOS_OK);
  EXPECT_EQ(mlos_training_release_resources(job), MLOS_OK);
}

TEST(TensorPool, PrewarmFaultsBuffersInAndTheyAreReused) {
  mlos_tmm_pool_t* pool = make_pool(64 * kMiB);
  EXPECT_EQ(stats_of(pool).resident_bytes, 0u);
  ASSERT_EQ(mlos_tmm_prewarm(pool, 4 * kMiB, 3), MLOS_OK) << mlos_last_error_message();
  mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.resident_bytes, 12 * kMiB);
  EXPECT_EQ(s.bytes_cached, 12 * kMiB);
  ASSERT_EQ(mlos_tmm_prewarm(pool, 4 * kMiB, 3), MLOS_OK);  // already there
  EXPECT_EQ(stats_of(pool).bytes_cached, 12 * kMiB);
  std::vector<void*> held;
  for (int i = 0; i < 3; ++i) held.push_back(acquire(pool, 4 * kMiB).data);
  s = stats_of(pool);
  EXPECT_EQ(s.reuse_hits, 3u);
  EXPECT_EQ(s.resident_bytes, 12 * kMiB);
  for (void* p : held) EXPECT_EQ(mlos_tmm_release(pool, p), MLOS_OK);
  // Over the capacity: what fits stays prewarmed.
  EXPECT_EQ(mlos_tmm_prewarm(pool, 8 * kMiB, 100), MLOS_ERR_NO_MEMORY);
  EXPECT_EQ(stats_of(pool).bytes_cached, 12 * kMiB + 6 * 8 * kMiB);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, TrimGivesCachedMemoryBack) {
  mlos_tmm_pool_t* pool = make_pool(32 * kMiB);
  const mlos_tmm_buffer_t a = acquire(pool, 8 * kMiB);
  const mlos_tmm_buffer_t b = acquire(pool, 8 * kMiB);
  memset(a.data, 1, a.capacity);
  memset(b.data, 1, b.capacity);
  EXPECT_EQ(stats_of(pool).resident_bytes, 16 * kMiB);
  ASSERT_EQ(mlos_tmm_release(pool, a.data), MLOS_OK);
  uint64_t freed = 0;
  ASSERT_EQ(mlos_tmm_trim(pool, &freed), MLOS_OK);
  EXPECT_EQ(freed, 8 * kMiB);
  EXPECT_EQ(stats_of(pool).resident_bytes, 8 * kMiB);
  EXPECT_EQ(static_cast<unsigned char*>(b.data)[0], 1);  // in use: untouched
  const mlos_tmm_buffer_t again = acquire(pool, 8 * kMiB);
  EXPECT_EQ(again.data, a.data);
  EXPECT_EQ(static_cast<unsigned char*>(again.data)[0], 0);  // faulted in anew
  EXPECT_EQ(mlos_tmm_release(pool, again.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, TheArenaIsASealedMemfdAnotherProcessMapsByDescriptor) {
  mlos_tmm_pool_t* pool = make_pool(4 * kMiB);
  const mlos_tmm_buffer_t b = acquire(pool, 256 * kKiB);
  memset(b.data, 0, b.capacity);
  int fd = -1;
  ASSERT_EQ(mlos_tmm_pool_fd(pool, &fd), MLOS_OK);
  EXPECT_EQ(fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
  EXPECT_NE(ftruncate(fd, 0), 0);  // sealed
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  EXPECT_NE(read_text("/proc/self/maps").find("memfd:mlos-tmm:test"), std::string::npos);
  const uint64_t offset = b.offset;
  ChildProcess writer(
      [&](ChildProcess&) {
        // The parent's pool is not the child's to allocate from.
        mlos_tmm_buffer_t mine{};
        if (mlos_tmm_acquire(pool, 1, &mine) != MLOS_ERR_INVALID_HANDLE) return 2;
        mlos_tmm_mapping_t m{};
        if (mlos_tmm_map_arena(fd, &m) != MLOS_OK || m.size != 4 * kMiB) return 3;
        memset(static_cast<char*>(m.base) + offset, 0x77, 256 * kKiB);
        return mlos_tmm_unmap_arena(&m) == MLOS_OK && m.base == nullptr ? 0 : 4;
      },
      false);
  EXPECT_EQ(writer.wait_exit(), 0);
  EXPECT_EQ(static_cast<unsigned char*>(b.data)[0], 0x77);
  EXPECT_EQ(static_cast<unsigned char*>(b.data)[256 * kKiB - 1], 0x77);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

TEST(TensorPool, OnlySealedArenasAreMapped) {
  mlos_tmm_mapping_t m{};
  EXPECT_EQ(mlos_tmm_map_arena(-1, &m), MLOS_ERR_INVALID_ARGUMENT);
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, 1 * kMiB), 0);
  EXPECT_EQ(mlos_tmm_map_arena(unsealed, &m), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlos_last_error_message()).find("not sealed"), std::string::npos);
  close(unsealed);
  const int file = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(mlos_tmm_map_arena(file, &m), MLOS_ERR_INVALID_ARGUMENT);
  close(file);
  EXPECT_EQ(mlos_tmm_map_arena(0, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_tmm_mapping_t bogus{&m, 4096};
  EXPECT_EQ(mlos_tmm_unmap_arena(&bogus), MLOS_ERR_INVALID_ARGUMENT);
}

TEST(TensorPool, APrivatePoolHasNoDescriptor) {
  mlos_tmm_pool_t* pool = make_pool(1 * kMiB, MLOS_TMM_PRIVATE);
  int fd = -1;
  EXPECT_EQ(mlos_tmm_pool_fd(pool, &fd), MLOS_ERR_UNSUPPORTED);
  const mlos_tmm_buffer_t b = acquire(pool, 64 * kKiB);
  memset(b.data, 1, b.capacity);
  EXPECT_EQ(stats_of(pool).resident_bytes, 64 * kKiB);
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

// Transparent huge pages: what is obtained follows the kernel's settings,
// read here independently of the library.
TEST(TensorPool, HugePagesReportWhatTheKernelGives) {
  auto selected = [](const std::string& path) {
    const std::string t = read_text(path);
    const auto a = t.find('['), z = t.find(']');
    return a == std::string::npos ? std::string() : t.substr(a + 1, z - a - 1);
  };
  const std::string root = "/sys/kernel/mm/transparent_hugepage/";
  std::string shmem = selected(root + "hugepages-2048kB/shmem_enabled");
  if (shmem.empty() || shmem == "inherit") shmem = selected(root + "shmem_enabled");
  std::string anon = selected(root + "hugepages-2048kB/enabled");
  if (anon.empty() || anon == "inherit") anon = selected(root + "enabled");

  mlos_tmm_pool_t* shared = make_pool(8 * kMiB, MLOS_TMM_HUGE_PAGES);
  if (shmem == "never" || shmem == "deny") {
    EXPECT_EQ(stats_of(shared).huge_pages, MLOS_TMM_HUGE_NONE);
    EXPECT_NE(notes_of(shared).find("huge_pages: shmem transparent huge pages are \"" + shmem), std::string::npos);
  } else {
    EXPECT_EQ(stats_of(shared).huge_pages, MLOS_TMM_HUGE_THP);
    EXPECT_EQ(notes_of(shared), "");
  }
  EXPECT_EQ(mlos_tmm_pool_destroy(shared), MLOS_OK);

  if (anon != "always" && anon != "madvise") GTEST_SKIP() << "anonymous THP is \"" << anon << "\" here";
  mlos_tmm_pool_t* priv = make_pool(8 * kMiB, MLOS_TMM_HUGE_PAGES | MLOS_TMM_PRIVATE);
  ASSERT_EQ(mlos_tmm_prewarm(priv, 4 * kMiB, 1), MLOS_OK);
  const mlos_tmm_stats_t s = stats_of(priv);
  EXPECT_EQ(s.huge_pages, MLOS_TMM_HUGE_THP);
  EXPECT_GT(s.huge_bytes, 0u) << "the kernel gave no huge page to a 2 MiB-aligned, madvised, prefaulted 4 MiB";
  EXPECT_LE(s.huge_bytes, 8 * kMiB);
  EXPECT_EQ(mlos_tmm_pool_destroy(priv), MLOS_OK);
}

TEST(TensorPool, CudaPinningNeedsAGpu) {
  const bool gpu = access("/dev/nvidiactl", F_OK) == 0;
  mlos_tmm_pool_t* pool = nullptr;
  const auto o = options(4 * kMiB, MLOS_TMM_CUDA_PINNED);
  const int rc = mlos_tmm_pool_create(nullptr, &o, &pool);
  if (gpu && rc == MLOS_OK) {
    EXPECT_EQ(stats_of(pool).locked_bytes, 4 * kMiB);
    EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
    return;
  }
  if (gpu) GTEST_SKIP() << "a GPU device node exists but CUDA refused: " << mlos_last_error_message();
  EXPECT_EQ(rc, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(mlos_last_error_message()).find("CUDA"), std::string::npos) << mlos_last_error_message();
}

TEST(TensorPool, ThreadsShareAPoolAndTheBooksBalance) {
  mlos_tmm_pool_t* pool = make_pool(64 * kMiB);
  constexpr int kRounds = 5000;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<void*> mine;
      for (int i = 0; i < kRounds; ++i) {
        mlos_tmm_buffer_t b{};
        if (mlos_tmm_acquire(pool, (1 + (i + t) % 7) * 32 * kKiB, &b) != MLOS_OK) ++errors;
        static_cast<char*>(b.data)[0] = static_cast<char>(t);
        mine.push_back(b.data);
        if (mine.size() == 3) {
          for (void* p : mine) {
            if (mlos_tmm_release(pool, p) != MLOS_OK) ++errors;
          }
          mine.clear();
        }
      }
      for (void* p : mine) {
        if (mlos_tmm_release(pool, p) != MLOS_OK) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  const mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.acquires, 4u * kRounds);
  EXPECT_EQ(s.releases, 4u * kRounds);
  EXPECT_EQ(s.buffers_in_use, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}

// hugetlbfs for real: refused while too few pages are free; then, as root,
// two 2 MiB pages are reserved for the test and given back after. One test,
// so that no other test of this file sees the reservation.
TEST(TensorPool, HugetlbIsUnsupportedWithoutPagesAndBacksTheArenaWithThem) {
  auto free_huge_pages = [] { return std::stol(status_field(read_text("/proc/meminfo"), "HugePages_Free")); };
  if (free_huge_pages() < 2) {
    mlos_tmm_pool_t* refused = nullptr;
    const auto o = options(4 * kMiB, MLOS_TMM_HUGETLB);
    EXPECT_EQ(mlos_tmm_pool_create(nullptr, &o, &refused), MLOS_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(mlos_last_error_message()).find("HugePages_Free"), std::string::npos);
    EXPECT_EQ(refused, nullptr);
  }
  const char* knob = "/proc/sys/vm/nr_hugepages";
  if (geteuid() != 0 || access(knob, W_OK) != 0) GTEST_SKIP() << "reserving huge pages needs root";
  const long before = std::stol(read_text(knob));
  auto set_reserved = [&](long n) {
    FILE* f = fopen(knob, "w");
    if (!f) return false;
    const bool ok = fprintf(f, "%ld\n", n) > 0;
    return fclose(f) == 0 && ok;
  };
  ASSERT_TRUE(set_reserved(before + 2));
  struct Restore {
    std::function<bool(long)> set;
    long n;
    ~Restore() { set(n); }
  } restore{set_reserved, before};
  if (free_huge_pages() < 2) {
    GTEST_SKIP() << "the kernel could not reserve 2 huge pages (memory fragmented)";
  }
  mlos_tmm_pool_t* pool = nullptr;
  const auto o = options(3 * kMiB, MLOS_TMM_HUGETLB);  // rounded up to 4 MiB
  ASSERT_EQ(mlos_tmm_pool_create(nullptr, &o, &pool), MLOS_OK) << mlos_last_error_message();
  const mlos_tmm_buffer_t b = acquire(pool, 2 * kMiB);
  memset(b.data, 9, b.capacity);
  const mlos_tmm_stats_t s = stats_of(pool);
  EXPECT_EQ(s.huge_pages, MLOS_TMM_HUGE_HUGETLB);
  EXPECT_EQ(s.capacity_bytes, 4 * kMiB);
  EXPECT_EQ(s.huge_bytes, 2 * kMiB);  // the page touched
  EXPECT_EQ(mlos_tmm_pin(pool, b.data), MLOS_OK);  // hugetlb pages are never swapped: nothing to do
  EXPECT_EQ(mlos_tmm_release(pool, b.data), MLOS_OK);
  EXPECT_EQ(mlos_tmm_pool_destroy(pool), MLOS_OK);
}
