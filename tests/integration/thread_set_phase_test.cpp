// SPDX-License-Identifier: Apache-2.0
// Phases reach the job's whole thread set: threads the program creates after
// its request (as torch creates its intra-op pool), never bound, get each
// phase's nice and I/O priority at the next change that alters settings, as
// /proc/self/task/<tid>/stat and ioprio_get(2) report; release restores them.
#include <gtest/gtest.h>
#include <mlos/training.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "integration/proc_observer.h"
#include "integration/worker_thread.h"

using namespace mlos_test;

TEST(ThreadSetPhase, UnboundThreadsCreatedAfterTheRequestFollowEveryPhase) {
  if (geteuid() != 0) GTEST_SKIP() << "lowering nice back needs CAP_SYS_NICE (root here)";
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  const int base = task_nice(current_tid());
  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD), MLOS_OK);

  // Created after the request and after the first phase, never bound.
  std::vector<std::unique_ptr<WorkerThread>> pool;
  for (int i = 0; i < 3; ++i) pool.push_back(std::make_unique<WorkerThread>());
  for (auto& w : pool) EXPECT_EQ(task_nice(w->tid()), base);

  struct Expect {
    mlos_training_phase_t phase;
    int nice_offset;
    int io_class;
    int io_level;
  };
  // The table of docs/phases.md.
  const Expect table[] = {{MLOS_TRAINING_PHASE_IDLE, 10, 3, 0},     {MLOS_TRAINING_PHASE_DATA_LOADING, 5, 2, 0},
                          {MLOS_TRAINING_PHASE_FORWARD, 0, 2, 4},   {MLOS_TRAINING_PHASE_BACKWARD, -5, 2, 4},
                          {MLOS_TRAINING_PHASE_OPTIMIZER, 0, 2, 4}, {MLOS_TRAINING_PHASE_CHECKPOINT, -10, 2, 0}};
  for (const Expect& e : table) {
    ASSERT_EQ(mlos_training_set_phase(res, e.phase), MLOS_OK);
    for (auto& w : pool) {
      EXPECT_EQ(task_nice(w->tid()), std::clamp(base + e.nice_offset, -20, 19)) << "phase " << e.phase;
      EXPECT_EQ(task_ioprio(w->tid()).io_class, e.io_class) << "phase " << e.phase;
      EXPECT_EQ(task_ioprio(w->tid()).level, e.io_level) << "phase " << e.phase;
    }
    // The requesting thread is one of the job's threads too.
    EXPECT_EQ(task_nice(current_tid()), std::clamp(base + e.nice_offset, -20, 19)) << "phase " << e.phase;
  }
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  ASSERT_EQ(mlos_training_get_placement(res, &pl), MLOS_OK);
  EXPECT_EQ(pl.bound_threads, 0);  // following is not binding
  EXPECT_EQ(pl.degraded_effects & MLOS_EFFECT_CPU_PRIORITY, 0u);

  const std::string affinity = cpus_allowed_list(pool[0]->tid());
  ASSERT_EQ(mlos_training_release_resources(res), MLOS_OK);
  for (auto& w : pool) {
    EXPECT_EQ(task_nice(w->tid()), base);
    EXPECT_EQ(task_ioprio(w->tid()).io_class, 0);
    EXPECT_EQ(cpus_allowed_list(w->tid()), affinity);  // never pinned
  }
  EXPECT_EQ(task_nice(current_tid()), base);
}

TEST(ThreadSetPhase, AThreadBoundByAnotherJobIsThatJobsAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "lowering nice back needs CAP_SYS_NICE (root here)";
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t *a = nullptr, *b = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &a), MLOS_OK);
  ASSERT_EQ(mlos_training_request_resources(&req, &b), MLOS_OK);
  WorkerThread w;
  const int base = task_nice(w.tid());
  ASSERT_EQ(mlos_training_bind_thread(b, w.handle(), 0), MLOS_OK);
  ASSERT_EQ(mlos_training_set_phase(a, MLOS_TRAINING_PHASE_IDLE), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), base);  // b's thread: a's IDLE does not reach it
  ASSERT_EQ(mlos_training_set_phase(b, MLOS_TRAINING_PHASE_CHECKPOINT), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), std::max(base - 10, -20));
  ASSERT_EQ(mlos_training_release_resources(b), MLOS_OK);
  ASSERT_EQ(mlos_training_release_resources(a), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), base);
  EXPECT_EQ(task_nice(current_tid()), base);
}
