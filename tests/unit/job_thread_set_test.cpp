// SPDX-License-Identifier: Apache-2.0
// The job's whole thread set (engine logic over a fake kernel): threads of
// the process that no job has follow the phases from the first change that
// alters settings after they appear; an unchanged phase lists nothing; the
// library's own threads and other jobs' threads are left alone; release
// restores what the followers had. Also the budget of what the library
// locks for a job (checkpoint + registered buffers).
#include <gtest/gtest.h>

#include <memory>

#include "engine/job.h"
#include "fakes/fake_broker.h"
#include "fakes/fake_kernel.h"

using mlos_test::FakeBroker;
using mlos_test::FakeKernel;

namespace {

class JobThreadSetTest : public ::testing::Test {
 protected:
  std::unique_ptr<mlos::Job> make_job(uint64_t memory_bytes = 0) {
    mlos::ClaimRequest r;
    r.placement.num_cpus = 1;
    r.placement.memory_bytes = memory_bytes;
    auto grant = broker->acquire(r);
    EXPECT_TRUE(grant.ok());
    return std::make_unique<mlos::Job>(mlos::JobSpec{r.placement, 0, "t"}, *grant, broker, kernel,
                                       [] { return uint64_t{1}; }, threads);
  }
  void spawn(pid_t tid, int nice = 0, mlos::IoPriority io = {}) {
    kernel.threads[tid] = {};
    kernel.threads[tid].nice = nice;
    kernel.threads[tid].io = io;
    kernel.process_tids.push_back(tid);
  }

  FakeKernel kernel;
  mlos::ThreadRegistry threads;
  std::shared_ptr<FakeBroker> broker = std::make_shared<FakeBroker>(mlos::make_uniform_topology(1, 2, 1));
};

TEST_F(JobThreadSetTest, ThreadsCreatedAfterTheRequestFollowFromTheNextChange) {
  spawn(1000);  // the requesting thread
  auto job = make_job();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_DATA_LOADING).ok());
  EXPECT_EQ(kernel.threads[1000].nice, 5);
  EXPECT_EQ(kernel.threads[1000].io, (mlos::IoPriority{2, 0}));

  spawn(1001, 5, {2, 0});  // an intra-op thread, created by 1000: inherits its settings
  spawn(1002, 5, {2, 0});
  const size_t scans = kernel.thread_scans;
  kernel.calls.clear();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_DATA_LOADING).ok());  // unchanged: nothing listed, nothing set
  EXPECT_EQ(kernel.thread_scans, scans);
  EXPECT_TRUE(kernel.calls.empty());

  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_BACKWARD).ok());
  EXPECT_EQ(kernel.thread_scans, scans + 1);
  // Their baseline is the process's (0), not the inherited 5: BACKWARD is -5.
  for (pid_t t : {1000, 1001, 1002}) {
    EXPECT_EQ(kernel.threads[t].nice, -5) << t;
    EXPECT_EQ(kernel.threads[t].io, (mlos::IoPriority{2, 4})) << t;
    EXPECT_EQ(kernel.threads[t].affinity, mlos::CpuSet::range(0, 63)) << t;  // never pinned
  }
  // FORWARD -> OPTIMIZER: same rule, no listing.
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  const size_t after_forward = kernel.thread_scans;
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_OPTIMIZER).ok());
  EXPECT_EQ(kernel.thread_scans, after_forward);
  EXPECT_EQ(job->snapshot()->bound_threads, 0);

  ASSERT_TRUE(job->release().ok());
  for (pid_t t : {1000, 1001, 1002}) {
    EXPECT_EQ(kernel.threads[t].nice, 0) << t;
    EXPECT_EQ(kernel.threads[t].io, mlos::IoPriority{}) << t;
  }
}

TEST_F(JobThreadSetTest, OwnSettingsAreKeptAsBaselineLibraryAndOtherJobsThreadsAreLeftAlone) {
  spawn(1000);
  spawn(1001, 3);  // set to 3 by the program itself, not inherited from mlOS
  spawn(1002);
  kernel.names[1002] = "mlos-memwatch";
  spawn(1003);
  auto other = make_job();
  ASSERT_TRUE(other->bind_thread(1003, false, 0).ok());
  auto job = make_job();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(kernel.threads[1000].nice, 10);
  EXPECT_EQ(kernel.threads[1001].nice, 13);
  EXPECT_EQ(kernel.threads[1002].nice, 0);
  EXPECT_EQ(kernel.threads[1002].io, mlos::IoPriority{});
  EXPECT_EQ(kernel.threads[1003].nice, 0);
  ASSERT_TRUE(job->release().ok());
  EXPECT_EQ(kernel.threads[1001].nice, 3);
}

TEST_F(JobThreadSetTest, ExitedFollowersAreDroppedWithoutADegradedNote) {
  spawn(1000);
  spawn(1001);
  auto job = make_job();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_FORWARD).ok());
  kernel.threads.erase(1001);  // exited: the next set fails with ESRCH in the fake
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(job->snapshot()->degraded, 0u);
  EXPECT_FALSE(threads.baseline(1001).has_value());
}

TEST_F(JobThreadSetTest, UnprivilegedFollowersGetIoPriorityOnly) {
  kernel.lowest_nice = 20;  // no CAP_SYS_NICE, RLIMIT_NICE 0
  spawn(1000);
  spawn(1001);
  auto job = make_job();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(kernel.threads[1001].nice, 0);
  EXPECT_EQ(kernel.threads[1001].io, (mlos::IoPriority{3, 0}));
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_CHECKPOINT).ok());
  EXPECT_EQ(kernel.threads[1001].nice, 0);
  EXPECT_EQ(kernel.threads[1001].io, (mlos::IoPriority{2, 0}));
  EXPECT_TRUE(job->snapshot()->degraded & MLOS_EFFECT_CPU_PRIORITY);
}

TEST_F(JobThreadSetTest, PartialRlimitNiceGivesTheDownwardMovesItCanUndo) {
  kernel.lowest_nice = 0;  // RLIMIT_NICE 20: back to 0, never below
  spawn(1000);
  auto job = make_job();
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_IDLE).ok());
  EXPECT_EQ(kernel.threads[1000].nice, 10);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_DATA_LOADING).ok());
  EXPECT_EQ(kernel.threads[1000].nice, 5);
  ASSERT_TRUE(job->set_phase(MLOS_TRAINING_PHASE_CHECKPOINT).ok());
  EXPECT_EQ(kernel.threads[1000].nice, 0);  // -10 clamped to what can be set
}

TEST_F(JobThreadSetTest, RegisteredAndCheckpointBuffersShareTheBudget) {
  auto job = make_job(/*memory_bytes=*/3 * 4096);
  alignas(4096) static char grads[2 * 4096];
  auto a = job->alloc_checkpoint_buffer(4096);
  ASSERT_TRUE(a.ok());
  auto refused = job->register_buffer(grads, sizeof grads + 1, MLOS_BUFFER_GRADIENT);  // 3 pages: 4 in all
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_NE(refused.error().message.find("memory_bytes 12288"), std::string::npos) << refused.error().message;
  // Nothing was kept: the same range registers once it fits.
  ASSERT_TRUE(job->register_buffer(grads, sizeof grads, MLOS_BUFFER_GRADIENT).ok());
  EXPECT_EQ(job->alloc_checkpoint_buffer(1).error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  ASSERT_TRUE(job->unregister_buffer(grads).ok());
  EXPECT_TRUE(job->alloc_checkpoint_buffer(1).ok());
  // Release gives every checkpoint buffer back.
  ASSERT_TRUE(job->release().ok());
  EXPECT_TRUE(kernel.mapped.empty());
}

}  // namespace
