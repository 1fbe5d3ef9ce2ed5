// SPDX-License-Identifier: Apache-2.0
// Checkpoint buffers are locked and prefaulted (VmLck grows by their size);
// registered gradient buffers are locked from BACKWARD until IDLE.
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "integration/job_request.h"
#include "integration/proc_observer.h"

using namespace mlos_test;

namespace {
constexpr size_t kMiB = 1 << 20;

}  // namespace

TEST(MemoryLock, CheckpointBufferIsLockedUntilFreed) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  mlos_training_resources_t* res = request_test_job(0);
  const long before = vm_locked_kb();
  void* buf = mlos_training_alloc_checkpoint_buffer(res, 16 * kMiB);
  if (buf == nullptr && mlos_last_error() == MLOS_ERR_LOCK_LIMIT) {
    mlos_training_release_resources(res);
    GTEST_SKIP() << "cannot lock 16 MiB here: " << mlos_last_error_message();
  }
  ASSERT_NE(buf, nullptr) << mlos_last_error_message();
  EXPECT_EQ(vm_locked_kb() - before, 16 * 1024);
  memset(buf, 0xab, 16 * kMiB);  // usable memory
  EXPECT_EQ(mlos_training_free_checkpoint_buffer(res, buf), MLOS_OK);
  EXPECT_EQ(vm_locked_kb(), before);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(MemoryLock, ReleaseFreesCheckpointBuffers) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  mlos_training_resources_t* res = request_test_job(0);
  const long before = vm_locked_kb();
  void* a = mlos_training_alloc_checkpoint_buffer(res, 3 * kMiB + 1);  // rounded up to pages
  ASSERT_NE(a, nullptr) << mlos_last_error_message();
  EXPECT_EQ(vm_locked_kb() - before, 3 * 1024 + 4);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
  EXPECT_EQ(vm_locked_kb(), before);
}

TEST(MemoryLock, CheckpointBuffersCountAgainstTheBudget) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  mlos_training_resources_t* res = request_test_job(8 * kMiB);
  void* a = mlos_training_alloc_checkpoint_buffer(res, 6 * kMiB);
  ASSERT_NE(a, nullptr) << mlos_last_error_message();
  const long locked = vm_locked_kb();
  EXPECT_EQ(mlos_training_alloc_checkpoint_buffer(res, 4 * kMiB), nullptr);
  EXPECT_EQ(mlos_last_error(), MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_EQ(vm_locked_kb(), locked);  // the failed call locked nothing
  EXPECT_EQ(mlos_training_alloc_checkpoint_buffer(res, 0), nullptr);
  EXPECT_EQ(mlos_last_error(), MLOS_ERR_INVALID_ARGUMENT);
  int not_ours = 0;
  EXPECT_EQ(mlos_training_free_checkpoint_buffer(res, &not_ours), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_free_checkpoint_buffer(res, nullptr), MLOS_OK);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(MemoryLock, GradientBuffersLockedFromBackwardUntilIdle) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  mlos_training_resources_t* res = request_test_job(0);
  const size_t bytes = 4 * kMiB;
  void* grads = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(grads, MAP_FAILED);
  const long before = vm_locked_kb();
  ASSERT_EQ(mlos_training_register_buffer(res, grads, bytes, MLOS_BUFFER_GRADIENT), MLOS_OK);
  EXPECT_EQ(mlos_training_register_buffer(res, static_cast<char*>(grads) + 4096, 4096, MLOS_BUFFER_GRADIENT),
            MLOS_ERR_INVALID_ARGUMENT);  // overlaps
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_EQ(vm_locked_kb(), before);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_BACKWARD);
  EXPECT_EQ(vm_locked_kb() - before, 4 * 1024);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_OPTIMIZER);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_EQ(vm_locked_kb() - before, 4 * 1024);  // stays locked across steps
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_IDLE);
  EXPECT_EQ(vm_locked_kb(), before);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_BACKWARD);
  EXPECT_EQ(vm_locked_kb() - before, 4 * 1024);
  EXPECT_EQ(mlos_training_unregister_buffer(res, grads), MLOS_OK);
  EXPECT_EQ(vm_locked_kb(), before);
  EXPECT_EQ(mlos_training_unregister_buffer(res, grads), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
  munmap(grads, bytes);
}
