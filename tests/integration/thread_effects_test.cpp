// SPDX-License-Identifier: Apache-2.0
// bind_thread and set_phase change what the kernel reports for the thread,
// and release puts it back. Every check reads /proc or ioprio_get(2).
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <sched.h>

#include "integration/proc_observer.h"
#include "integration/worker_thread.h"

using namespace mlos_test;

namespace {

mlos_training_resources_t* request(int cpus, bool exclusive = false) {
  mlos_training_resource_request_t req = {.num_cpus = cpus, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = exclusive};
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  return res;
}

std::vector<int> cpus_of(mlos_training_resources_t* res) {
  size_t n = 0;
  mlos_training_get_cpus(res, nullptr, 0, &n);
  std::vector<int> v(n);
  EXPECT_EQ(mlos_training_get_cpus(res, v.data(), v.size(), &n), MLOS_OK);
  return v;
}

}  // namespace

TEST(ThreadEffects, BindPinsOtherThreadToOneCpuAndReleaseRestores) {
  WorkerThread w;
  const std::string before = cpus_allowed_list(w.tid());
  mlos_training_resources_t* res = request(1);
  ASSERT_NE(res, nullptr);
  std::vector<int> cpus = cpus_of(res);
  ASSERT_EQ(cpus.size(), 1u);

  ASSERT_EQ(mlos_training_bind_thread(res, w.handle(), 0), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(cpus_allowed_list(w.tid()), std::to_string(cpus[0]));
  // Another thread's memory policy cannot be set (documented): unchanged.
  EXPECT_EQ(task_mempolicy(w.tid()), "default");

  ASSERT_EQ(mlos_training_release_resources(res), MLOS_OK);
  EXPECT_EQ(cpus_allowed_list(w.tid()), before);
}

TEST(ThreadEffects, CpuIndexAllGivesTheWholeAllocation) {
  if (allowed_cpu_count() < 2) GTEST_SKIP() << "needs 2 allowed CPUs";
  WorkerThread w;
  mlos_training_resources_t* res = request(2);
  ASSERT_NE(res, nullptr);
  std::vector<int> cpus = cpus_of(res);
  ASSERT_EQ(mlos_training_bind_thread(res, w.handle(), MLOS_CPU_INDEX_ALL), MLOS_OK);
  std::string expect = std::to_string(std::min(cpus[0], cpus[1])) + "-" + std::to_string(std::max(cpus[0], cpus[1]));
  if (std::abs(cpus[0] - cpus[1]) != 1) expect = std::to_string(std::min(cpus[0], cpus[1])) + "," + std::to_string(std::max(cpus[0], cpus[1]));
  EXPECT_EQ(cpus_allowed_list(w.tid()), expect);
  EXPECT_EQ(mlos_training_bind_thread(res, w.handle(), 2), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_bind_thread(res, w.handle(), -2), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(ThreadEffects, BindingTheCallingThreadSetsItsMemoryPolicy) {
  // Run on a fresh thread so the test runner's main thread stays untouched.
  struct Result {
    std::string during, after;
    int rc;
  } r{};
  std::thread t([&] {
    mlos_training_resources_t* res = request(1);
    r.rc = mlos_training_bind_thread(res, pthread_self(), 0);
    mlos_training_placement_t pl = {.struct_size = sizeof pl};
    mlos_training_get_placement(res, &pl);
    r.during = task_mempolicy(current_tid());
    EXPECT_EQ(r.during, "prefer:" + std::to_string(pl.numa_node));
    mlos_training_release_resources(res);
    r.after = task_mempolicy(current_tid());
  });
  t.join();
  EXPECT_EQ(r.rc, MLOS_OK);
  EXPECT_EQ(r.after, "default");
}

TEST(ThreadEffects, PhasesChangeNiceAndIoPriorityOfBoundThreads) {
  WorkerThread w;
  const int base = task_nice(w.tid());
  const IoPrio base_io = task_ioprio(w.tid());
  mlos_training_resources_t* res = request(1);
  ASSERT_EQ(mlos_training_bind_thread(res, w.handle(), 0), MLOS_OK);
  // Before any set_phase the thread keeps its own priorities.
  EXPECT_EQ(task_nice(w.tid()), base);
  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_IDLE), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), std::min(19, base + 10));
  EXPECT_EQ(task_ioprio(w.tid()).io_class, 3);  // IOPRIO_CLASS_IDLE

  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_BACKWARD), MLOS_OK);
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  mlos_training_get_placement(res, &pl);
  if (pl.degraded_effects & MLOS_EFFECT_CPU_PRIORITY) {
    GTEST_SKIP() << "process may not raise priority (no CAP_SYS_NICE); covered by PrivilegeTest";
  }
  EXPECT_EQ(task_nice(w.tid()), std::max(-20, base - 5));
  EXPECT_EQ(task_ioprio(w.tid()).io_class, 2);  // best effort
  EXPECT_EQ(task_ioprio(w.tid()).level, 4);

  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_CHECKPOINT), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), std::max(-20, base - 10));
  EXPECT_EQ(task_ioprio(w.tid()).level, 0);

  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_DATA_LOADING), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), std::min(19, base + 5));

  ASSERT_EQ(mlos_training_release_resources(res), MLOS_OK);
  EXPECT_EQ(task_nice(w.tid()), base);
  EXPECT_EQ(task_ioprio(w.tid()).io_class, base_io.io_class);
  EXPECT_EQ(task_ioprio(w.tid()).level, base_io.level);
}

TEST(ThreadEffects, PriorityShiftsEveryPhase) {
  WorkerThread w;
  const int base = task_nice(w.tid());
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 3, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK);
  ASSERT_EQ(mlos_training_bind_thread(res, w.handle(), 0), MLOS_OK);
  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD), MLOS_OK);
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  mlos_training_get_placement(res, &pl);
  if (!(pl.degraded_effects & MLOS_EFFECT_CPU_PRIORITY)) EXPECT_EQ(task_nice(w.tid()), std::max(-20, base - 3));
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
  req.priority = MLOS_PRIORITY_MAX + 1;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(res, nullptr);
}

TEST(ThreadEffects, SamePhaseSettingsCostNoOsUpdate) {
  WorkerThread w;
  mlos_training_resources_t* res = request(1);
  ASSERT_EQ(mlos_training_bind_thread(res, w.handle(), 0), MLOS_OK);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
  mlos_training_phase_profile_t p0 = {.struct_size = sizeof p0};
  mlos_training_get_phase_profile(res, &p0);
  // FORWARD -> OPTIMIZER -> FORWARD: identical OS settings, phases recorded.
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_OPTIMIZER);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
  mlos_training_phase_profile_t p1 = {.struct_size = sizeof p1};
  mlos_training_get_phase_profile(res, &p1);
  EXPECT_EQ(p1.os_updates, p0.os_updates);
  EXPECT_EQ(p1.set_phase_calls, p0.set_phase_calls + 3);
  EXPECT_EQ(p1.entries[MLOS_TRAINING_PHASE_OPTIMIZER], p0.entries[MLOS_TRAINING_PHASE_OPTIMIZER] + 1);
  EXPECT_EQ(p1.entries[MLOS_TRAINING_PHASE_FORWARD], p0.entries[MLOS_TRAINING_PHASE_FORWARD] + 1);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(ThreadEffects, ThreadBoundByTwoHandlesIsRestoredWhateverTheReleaseOrder) {
  for (bool first_released_first : {true, false}) {
    WorkerThread w;
    const std::string before = cpus_allowed_list(w.tid());
    const int nice_before = task_nice(w.tid());
    mlos_training_resources_t* a = request(1);
    mlos_training_resources_t* b = request(1);
    ASSERT_EQ(mlos_training_bind_thread(a, w.handle(), 0), MLOS_OK);
    ASSERT_EQ(mlos_training_set_phase(a, MLOS_TRAINING_PHASE_IDLE), MLOS_OK);
    ASSERT_EQ(mlos_training_bind_thread(b, w.handle(), 0), MLOS_OK);  // moves the thread to b
    EXPECT_EQ(cpus_allowed_list(w.tid()), std::to_string(cpus_of(b)[0]));
    EXPECT_EQ(mlos_training_release_resources(first_released_first ? a : b), MLOS_OK);
    EXPECT_EQ(mlos_training_release_resources(first_released_first ? b : a), MLOS_OK);
    EXPECT_EQ(cpus_allowed_list(w.tid()), before);
    EXPECT_EQ(task_nice(w.tid()), nice_before);
  }
}
