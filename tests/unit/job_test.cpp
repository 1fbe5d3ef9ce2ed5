// SPDX-License-Identifier: Apache-2.0
// Job (engine logic) over a fake kernel: which system calls a phase change
// makes, what release restores, and how missing privileges degrade.
#include <gtest/gtest.h>

#include <memory>

#include "engine/job.h"
#include "mlos/log.h"
#include "fakes/fake_broker.h"
#include "fakes/fake_kernel.h"

using mlos_test::FakeBroker;
using mlos_test::FakeKernel;

namespace {

class JobTest : public ::testing::Test {
 protected:
  std::unique_ptr<mlos::Job> make_job(int cpus, int priority = 0, uint64_t memory_bytes = 0) {
    mlos::ClaimRequest r;
    r.placement.num_cpus = cpus;
    r.placement.memory_bytes = memory_bytes;
    auto grant = broker->acquire(r);
    EXPECT_TRUE(grant.ok());
    return std::make_unique<mlos::Job>(mlos::JobSpec{r.placement, priority, "t"}, *grant, broker, kernel,
                                       [this] { return now_ns; }, threads);
  }
  size_t calls_matching(const std::string& prefix) const {
    size_t n = 0;
    for (const auto& c : kernel.calls) n += c.rfind(prefix, 0) == 0;
    return n;
  }

  FakeKernel kernel;
  mlos::ThreadRegistry threads;  // per test: fake tids must not leak between tests
  std::shared_ptr<FakeBroker> broker = std::make_shared<FakeBroker>(mlos::make_uniform_topology(2, 4, 2));
  uint64_t now_ns = 1000;
};

TEST_F(JobTest, BindPinsAndDoesNotTouchPrioritiesBeforeFirstPhase) {
  kernel.threads[7] = {};
  auto job = make_job(2);
  ASSERT_TRUE(job->bind_thread(7, false, 1).ok());
  EXPECT_EQ(kernel.calls, std::vector<std::string>({"set_affinity 7 2"}));  // cpu_index 1 = core 1's first PU
  EXPECT_EQ(kernel.threads[7].nice, 0);
}

TEST_F(JobTest, PhaseChangesCallTheKernelOnlyWhenSettingsDiffer) {
  kernel.threads[7] = {};
  kernel.threads[8] = {};
  auto job = make_job(2);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  ASSERT_TRUE(job->bind_thread(8, false, 1).ok());
  kernel.calls.clear();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  // FORWARD: nice 0 equals the base, I/O BE/4 differs from "none".
  EXPECT_EQ(kernel.calls, std::vector<std::string>({"set_io 7 2/4", "set_io 8 2/4"}));
  kernel.calls.clear();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_OPTIMIZER).ok());  // same settings as FORWARD
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  EXPECT_TRUE(kernel.calls.empty());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_EQ(kernel.calls, std::vector<std::string>({"set_nice 7 -5", "set_nice 8 -5"}));
  auto snap = job->snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->set_phase_calls, 5u);
  EXPECT_EQ(snap->os_updates, 2u);
}

TEST_F(JobTest, ProfileTimesEachPhaseWithTheInjectedClock) {
  auto job = make_job(1);
  now_ns += 500;  // IDLE until the first phase
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_DATA_LOADING).ok());
  now_ns += 3000;
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  now_ns += 7000;
  auto snap = job->snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->phase_ns[MLOS_TRAINING_PHASE_IDLE], 500u);
  EXPECT_EQ(snap->phase_ns[MLOS_TRAINING_PHASE_DATA_LOADING], 3000u);
  EXPECT_EQ(snap->phase_ns[MLOS_TRAINING_PHASE_FORWARD], 7000u);
  EXPECT_EQ(snap->entries[MLOS_TRAINING_PHASE_FORWARD], 1u);
}

TEST_F(JobTest, PriorityLowersNiceOfEveryPhase) {
  kernel.threads[7] = {};
  auto job = make_job(1, /*priority=*/4);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  EXPECT_EQ(kernel.threads[7].nice, -4);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_CHECKPOINT).ok());
  EXPECT_EQ(kernel.threads[7].nice, -14);
}

TEST_F(JobTest, ReleaseRestoresEverythingItChanged) {
  kernel.threads[7] = {mlos::CpuSet::range(0, 15), 2, mlos::IoPriority{2, 6}};
  kernel.threads[kernel.self_tid] = {};
  kernel.policy = {MPOL_DEFAULT, {}};
  auto job = make_job(2);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  ASSERT_TRUE(job->bind_thread(kernel.self_tid, true, MLOS_CPU_INDEX_ALL).ok());
  EXPECT_EQ(kernel.policy.mode, MPOL_PREFERRED);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(kernel.threads[7].nice, 12);
  ASSERT_TRUE(job->release().ok());
  EXPECT_EQ(kernel.threads[7].affinity, mlos::CpuSet::range(0, 15));
  EXPECT_EQ(kernel.threads[7].nice, 2);
  EXPECT_EQ(kernel.threads[7].io, (mlos::IoPriority{2, 6}));
  EXPECT_EQ(kernel.policy.mode, MPOL_DEFAULT);
  EXPECT_EQ(broker->released, std::vector<uint64_t>({1}));
  EXPECT_EQ(job->release().error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(job->set_phase(MLOS_TRAINING_PHASE_IDLE).error().code, MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(broker->released.size(), 1u);
}

TEST_F(JobTest, WithoutPermissionToLowerNiceItIsLeftAlone) {
  kernel.threads[7] = {};
  kernel.lowest_nice = 20;  // RLIMIT_NICE 0, no CAP_SYS_NICE
  auto job = make_job(1);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  kernel.calls.clear();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_EQ(calls_matching("set_nice"), 0u);
  EXPECT_EQ(kernel.threads[7].nice, 0);
  auto snap = job->snapshot();
  EXPECT_TRUE(snap->degraded & MLOS_EFFECT_CPU_PRIORITY);
  EXPECT_NE(snap->notes.find("cpu_priority: not managed"), std::string::npos);
  EXPECT_EQ(snap->phase, MLOS_TRAINING_PHASE_BACKWARD);
}

TEST_F(JobTest, PartialNicePermissionClampsTargets) {
  kernel.threads[7] = {};
  kernel.lowest_nice = -2;  // RLIMIT_NICE 22
  auto job = make_job(1);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_CHECKPOINT).ok());
  EXPECT_EQ(kernel.threads[7].nice, -2);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(kernel.threads[7].nice, 10);
}

TEST_F(JobTest, RefusedSettingIsNotedAndNotRetriedForTheSameTarget) {
  kernel.threads[7] = {};
  kernel.fail_set_nice = true;
  auto job = make_job(1);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_OPTIMIZER).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_EQ(calls_matching("set_nice"), 3u);  // -5, 0, -5: one attempt per change
  auto snap = job->snapshot();
  EXPECT_TRUE(snap->degraded & MLOS_EFFECT_CPU_PRIORITY);
  EXPECT_NE(snap->notes.find("setpriority"), std::string::npos);
}

TEST_F(JobTest, GradientBuffersLockOnBackwardAndUnlockOnIdle) {
  auto job = make_job(1);
  alignas(4096) static char grads[3 * 4096];
  ASSERT_TRUE(job->register_buffer(grads, sizeof grads, MLOS_BUFFER_GRADIENT).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  EXPECT_EQ(kernel.locked_bytes, 0u);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_EQ(kernel.locked_bytes, sizeof grads);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_CHECKPOINT).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_EQ(calls_matching("lock"), 1u);  // stays locked: no repeated mlock
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(kernel.locked_bytes, 0u);
}

TEST_F(JobTest, FailedGradientLockIsNotedNotFatal) {
  kernel.fail_lock = true;
  auto job = make_job(1);
  alignas(4096) static char grads[4096];
  ASSERT_TRUE(job->register_buffer(grads, sizeof grads, MLOS_BUFFER_GRADIENT).ok());
  EXPECT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_TRUE(job->snapshot()->degraded & MLOS_EFFECT_MEMLOCK);
}

TEST_F(JobTest, CheckpointBufferErrors) {
  auto job = make_job(1, 0, /*memory_bytes=*/10000);
  EXPECT_EQ(job->alloc_checkpoint_buffer(0).error().code, MLOS_ERR_INVALID_ARGUMENT);
  auto a = job->alloc_checkpoint_buffer(5000);  // 8192 after rounding
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(job->alloc_checkpoint_buffer(4096).error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_EQ(kernel.locked_bytes, 8192u);
  kernel.fail_lock = true;
  ASSERT_TRUE(job->free_checkpoint_buffer(*a).ok());
  EXPECT_EQ(job->alloc_checkpoint_buffer(4096).error().code, MLOS_ERR_LOCK_LIMIT);
  EXPECT_EQ(kernel.locked_bytes, 0u);
}

TEST_F(JobTest, AnUnlockedCheckpointBufferOnlyWhenAskedForAndCountedAgainstTheBudget) {
  auto job = make_job(1, 0, /*memory_bytes=*/10000);
  kernel.fail_lock = true;
  bool locked = true;
  auto a = job->alloc_checkpoint_buffer(5000, /*allow_unlocked=*/true, &locked);  // 8192 after rounding
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_FALSE(locked);
  EXPECT_EQ(kernel.locked_bytes, 0u);
  EXPECT_EQ(kernel.unlocked_mappings.count(*a), 1u);
  // Counted like a locked one: 8192 + 4096 is over 10000.
  EXPECT_EQ(job->alloc_checkpoint_buffer(4096, true).error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  ASSERT_TRUE(job->free_checkpoint_buffer(*a).ok());
  EXPECT_TRUE(kernel.mapped.empty());
  // When the lock works, the buffer is locked whatever the flag.
  kernel.fail_lock = false;
  auto b = job->alloc_checkpoint_buffer(4096, true, &locked);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(locked);
  EXPECT_EQ(kernel.locked_bytes, 4096u);
  ASSERT_TRUE(job->free_checkpoint_buffer(*b).ok());
  EXPECT_EQ(kernel.locked_bytes, 0u);
}

TEST_F(JobTest, BindErrorsChangeNothing) {
  auto job = make_job(2);
  EXPECT_EQ(job->bind_thread(99, false, 0).error().code, MLOS_ERR_NO_SUCH_THREAD);
  kernel.threads[7] = {};
  EXPECT_EQ(job->bind_thread(7, false, 2).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(job->bind_thread(7, false, -5).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(kernel.calls.empty());
  EXPECT_EQ(job->snapshot()->bound_threads, 0);
}

TEST_F(JobTest, ThreadBoundByTwoJobsIsRestoredWhateverTheReleaseOrder) {
  for (bool first_released_first : {true, false}) {
    kernel.threads[7] = {mlos::CpuSet::range(0, 15), 1, mlos::IoPriority{}};
    auto a = make_job(1);
    auto b = make_job(1);
    ASSERT_TRUE(a->bind_thread(7, false, 0).ok());
    ASSERT_TRUE(a->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
    ASSERT_TRUE(b->bind_thread(7, false, 0).ok());  // moves the thread to b
    ASSERT_TRUE(b->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
    EXPECT_EQ(kernel.threads[7].nice, -4);  // b's phase on the original base 1
    kernel.calls.clear();
    ASSERT_TRUE(a->set_phase(MLOS_TRAINING_PHASE_CHECKPOINT).ok());
    EXPECT_TRUE(kernel.calls.empty()) << "a no longer owns the thread";
    ASSERT_TRUE((first_released_first ? a : b)->release().ok());
    ASSERT_TRUE((first_released_first ? b : a)->release().ok());
    EXPECT_EQ(kernel.threads[7].affinity, mlos::CpuSet::range(0, 15));
    EXPECT_EQ(kernel.threads[7].nice, 1);
    EXPECT_EQ(kernel.threads[7].io, mlos::IoPriority{});
  }
}

TEST_F(JobTest, FailedBindRecordsNothing) {
  kernel.threads[7] = {};
  kernel.fail_set_affinity = true;
  auto job = make_job(1);
  EXPECT_EQ(job->bind_thread(7, false, 0).error().code, MLOS_ERR_SYSTEM);
  EXPECT_EQ(job->snapshot()->bound_threads, 0);
  EXPECT_FALSE(threads.baseline(7).has_value());
  kernel.calls.clear();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_TRUE(kernel.calls.empty());
}

TEST_F(JobTest, RefusedGradientLockIsNotRetriedUntilTheTargetChanges) {
  kernel.fail_lock = true;
  auto job = make_job(1);
  alignas(4096) static char grads[4096];
  ASSERT_TRUE(job->register_buffer(grads, sizeof grads, MLOS_BUFFER_GRADIENT).ok());
  for (auto ph : {MLOS_TRAINING_PHASE_BACKWARD, MLOS_TRAINING_PHASE_OPTIMIZER, MLOS_TRAINING_PHASE_FORWARD,
                  MLOS_TRAINING_PHASE_BACKWARD}) {
    ASSERT_TRUE(job->set_phase(ph).ok());
  }
  EXPECT_EQ(calls_matching("lock"), 1u);
}

TEST_F(JobTest, BufferRegisteredAfterBackwardIsLockedAtOnce) {
  auto job = make_job(1);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  alignas(4096) static char grads[2 * 4096];
  ASSERT_TRUE(job->register_buffer(grads, sizeof grads, MLOS_BUFFER_GRADIENT).ok());
  EXPECT_EQ(kernel.locked_bytes, sizeof grads);
}

TEST_F(JobTest, DegradedEffectsAreLoggedOnceAsWarnings) {
  static std::vector<std::string> warnings;
  warnings.clear();
  mlos_set_log_handler(
      [](mlos_log_level_t level, const char* message, void*) {
        if (level == MLOS_LOG_WARN) warnings.emplace_back(message);
      },
      MLOS_LOG_WARN, nullptr);
  kernel.threads[7] = {};
  kernel.fail_set_nice = true;
  auto job = make_job(1);
  ASSERT_TRUE(job->bind_thread(7, false, 0).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
    ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  }
  mlos_set_log_handler(nullptr, MLOS_LOG_WARN, nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cpu_priority: setpriority"), std::string::npos) << warnings[0];
}

}  // namespace
