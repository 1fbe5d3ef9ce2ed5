// SPDX-License-Identifier: Apache-2.0
// A forked child inherits its parent's handles but not its jobs: it can
// neither re-pin nor renice the parent's threads nor free its claim.
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <stdlib.h>

#include "integration/child_process.h"
#include "integration/proc_observer.h"

using namespace mlos_test;

TEST(ForkSafety, ChildCannotTouchParentsJob) {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = true};
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  ASSERT_EQ(mlos_training_bind_thread(res, pthread_self(), 0), MLOS_OK);
  ASSERT_EQ(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD), MLOS_OK);
  const pid_t parent_tid = current_tid();
  const std::string pinned = cpus_allowed_list(parent_tid);
  const int nice_before = task_nice(parent_tid);

  ChildProcess child(
      [&](ChildProcess& self) {
        int failures = 0;
        if (mlos_training_set_phase(res, MLOS_TRAINING_PHASE_CHECKPOINT) != MLOS_ERR_INVALID_HANDLE) ++failures;
        if (mlos_training_bind_thread(res, pthread_self(), 0) != MLOS_ERR_INVALID_HANDLE) ++failures;
        if (mlos_training_release_resources(res) != MLOS_OK) ++failures;  // forgets its copy
        if (mlos_training_release_resources(res) != MLOS_ERR_INVALID_HANDLE) ++failures;
        if (failures) self.report("child saw " + std::to_string(failures) + " unexpected results");
        return failures;
      },
      false);
  EXPECT_EQ(child.read_line(), "");
  EXPECT_EQ(child.wait_exit(), 0);

  // The parent's thread and claim are untouched.
  EXPECT_EQ(cpus_allowed_list(parent_tid), pinned);
  EXPECT_EQ(task_nice(parent_tid), nice_before);
  const std::string ledger = read_text(std::string(getenv("MLOS_RUNTIME_DIR")) + "/claims.json");
  EXPECT_NE(ledger.find("\"pid\": " + std::to_string(getpid())), std::string::npos);
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  ASSERT_EQ(mlos_training_get_placement(res, &pl), MLOS_OK);
  EXPECT_EQ(pl.phase, MLOS_TRAINING_PHASE_FORWARD);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

namespace {
void ignore_pressure(mlos_memory_pressure_level_t, const mlos_memory_pressure_info_t*, void*) {}
}  // namespace

TEST(ForkSafety, AChildDroppingAWatchedHandleLeavesTheParentsWatcherAlone) {
  // The parent's memory watcher thread does not exist in a child; dropping
  // the child's copy must neither join it nor take its locks.
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  ASSERT_EQ(mlos_training_register_memory_callback(res, ignore_pressure, nullptr), MLOS_OK)
      << mlos_last_error_message();
  ChildProcess child(
      [&](ChildProcess& self) {
        int failures = 0;
        if (mlos_training_unregister_memory_callback(res, ignore_pressure, nullptr) != MLOS_ERR_INVALID_HANDLE) {
          ++failures;
        }
        if (mlos_training_release_resources(res) != MLOS_OK) ++failures;
        if (failures) self.report("child saw " + std::to_string(failures) + " unexpected results");
        return failures;
      },
      false);
  EXPECT_EQ(child.read_line(), "");
  EXPECT_EQ(child.wait_exit(), 0);
  mlos_memory_pressure_info_t info = {};
  info.struct_size = sizeof info;
  EXPECT_EQ(mlos_training_get_memory_pressure(res, &info), MLOS_OK);
  EXPECT_EQ(mlos_training_unregister_memory_callback(res, ignore_pressure, nullptr), MLOS_OK);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}
