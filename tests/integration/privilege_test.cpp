// SPDX-License-Identifier: Apache-2.0
// Without privileges (an unprivileged user: no CAP_SYS_NICE, no
// CAP_IPC_LOCK, a small RLIMIT_MEMLOCK, a ledger it cannot write), every
// call still works or fails cleanly, the phase is still recorded, and the
// reasons are queryable.
#include <grp.h>
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <sys/resource.h>

#include <thread>

#include "integration/child_process.h"
#include "integration/proc_observer.h"
#include "integration/worker_thread.h"

using namespace mlos_test;

namespace {

// Runs `checks` as user nobody in a child; returns its failure count
// (or -1 if it could not drop privileges).
int as_nobody(const std::function<int(ChildProcess&)>& checks) {
  ChildProcess child(
      [&](ChildProcess& self) {
        struct rlimit small = {1 << 20, 1 << 20};
        setrlimit(RLIMIT_MEMLOCK, &small);
        if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) return 99;
        return checks(self);
      },
      false);
  std::string line;
  while (!(line = child.read_line()).empty()) ADD_FAILURE() << "child: " << line;
  return child.wait_exit();
}

#define CHILD_EXPECT(cond)                                  \
  do {                                                      \
    if (!(cond)) {                                          \
      self.report(std::string("failed: ") + #cond);         \
      ++failures;                                           \
    }                                                       \
  } while (0)

}  // namespace

TEST(Privilege, UnprivilegedProcessDegradesWithReasons) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to user nobody";
  SKIP_IF_MLOCK_UNOBSERVABLE();
  // Make sure the ledger directory exists (root-owned, not writable by nobody).
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK);
  ASSERT_EQ(mlos_training_release_resources(res), MLOS_OK);

  int rc = as_nobody([&](ChildProcess& self) {
    int failures = 0;
    mlos_training_resources_t* r = nullptr;
    CHILD_EXPECT(mlos_training_request_resources(&req, &r) == MLOS_OK);
    if (r == nullptr) return 1;
    WorkerThread w;
    const int base = task_nice(w.tid());
    CHILD_EXPECT(mlos_training_bind_thread(r, w.handle(), 0) == MLOS_OK);
    CHILD_EXPECT(mlos_training_set_phase(r, MLOS_TRAINING_PHASE_IDLE) == MLOS_OK);
    // Raising nice could not be undone without CAP_SYS_NICE: left alone.
    CHILD_EXPECT(task_nice(w.tid()) == base);
    CHILD_EXPECT(task_ioprio(w.tid()).io_class == 3);  // I/O idle needs no privilege
    CHILD_EXPECT(mlos_training_set_phase(r, MLOS_TRAINING_PHASE_BACKWARD) == MLOS_OK);
    CHILD_EXPECT(task_nice(w.tid()) == base);

    mlos_training_placement_t pl = {.struct_size = sizeof pl};
    CHILD_EXPECT(mlos_training_get_placement(r, &pl) == MLOS_OK);
    CHILD_EXPECT(pl.phase == MLOS_TRAINING_PHASE_BACKWARD);  // still recorded
    CHILD_EXPECT((pl.degraded_effects & MLOS_EFFECT_CPU_PRIORITY) != 0);
    CHILD_EXPECT((pl.degraded_effects & MLOS_EFFECT_LEDGER) != 0);
    CHILD_EXPECT(pl.claim_id == 0);

    char notes[4096];
    size_t needed = 0;
    CHILD_EXPECT(mlos_training_get_notes(r, notes, 1, &needed) == MLOS_ERR_BUFFER_TOO_SMALL);
    CHILD_EXPECT(needed > 1);
    CHILD_EXPECT(mlos_training_get_notes(r, notes, sizeof notes, &needed) == MLOS_OK);
    CHILD_EXPECT(strstr(notes, "cpu_priority: not managed") != nullptr);
    CHILD_EXPECT(strstr(notes, "ledger: claim not recorded") != nullptr);

    // Locking beyond RLIMIT_MEMLOCK: a clear error, never an unlocked buffer.
    const long locked = vm_locked_kb();
    CHILD_EXPECT(mlos_training_alloc_checkpoint_buffer(r, 8 << 20) == nullptr);
    CHILD_EXPECT(mlos_last_error() == MLOS_ERR_LOCK_LIMIT);
    CHILD_EXPECT(strstr(mlos_last_error_message(), "RLIMIT_MEMLOCK") != nullptr);
    CHILD_EXPECT(vm_locked_kb() == locked);
    // Within the limit it works.
    CHILD_EXPECT(mlos_training_alloc_checkpoint_buffer(r, 256 << 10) != nullptr);
    // Asked for, the unlocked fallback: nothing more in VmLck.
    bool is_locked = true;
    void* unlocked = mlos_training_alloc_checkpoint_buffer_ex(r, 8 << 20, MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED,
                                                              &is_locked);
    CHILD_EXPECT(unlocked != nullptr);
    CHILD_EXPECT(!is_locked);
    CHILD_EXPECT(vm_locked_kb() <= locked + 256);
    CHILD_EXPECT(mlos_training_free_checkpoint_buffer(r, unlocked) == MLOS_OK);

    // Exclusive CPUs cannot be honoured without a usable ledger.
    mlos_training_resource_request_t excl = req;
    excl.exclusive_cpus = true;
    mlos_training_resources_t* r2 = nullptr;
    CHILD_EXPECT(mlos_training_request_resources(&excl, &r2) == MLOS_ERR_UNSUPPORTED);
    CHILD_EXPECT(r2 == nullptr);

    CHILD_EXPECT(mlos_training_release_resources(r) == MLOS_OK);
    return failures;
  });
  EXPECT_EQ(rc, 0);
}

// What an unprivileged embedded job gets, per phase, on every thread of its
// process (the requesting thread and one created after the request): the
// I/O priority of the phase table, and no nice change (with RLIMIT_NICE 0 a
// raised nice could never be lowered back, so no phase raises it; the job's
// CPU priority comes from mlosd's cgroup weight in daemon mode).
TEST(Privilege, UnprivilegedJobGetsEachPhasesIoPriorityOnEveryThreadAndNoNiceChange) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to user nobody";
  struct rlimit nice_limit {};
  getrlimit(RLIMIT_NICE, &nice_limit);
  if (nice_limit.rlim_cur != 0) GTEST_SKIP() << "the statement below is for RLIMIT_NICE 0";
  int rc = as_nobody([&](ChildProcess& self) {
    int failures = 0;
    mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                            .priority = 0, .exclusive_cpus = false};
    mlos_training_resources_t* r = nullptr;
    CHILD_EXPECT(mlos_training_request_resources(&req, &r) == MLOS_OK);
    if (r == nullptr) return 1;
    WorkerThread late;  // created after the request, never bound
    const int base = task_nice(late.tid());
    struct Got {
      mlos_training_phase_t phase;
      int io_class, io_level;
    };
    const Got table[] = {{MLOS_TRAINING_PHASE_IDLE, 3, 0},     {MLOS_TRAINING_PHASE_DATA_LOADING, 2, 0},
                         {MLOS_TRAINING_PHASE_FORWARD, 2, 4},  {MLOS_TRAINING_PHASE_BACKWARD, 2, 4},
                         {MLOS_TRAINING_PHASE_OPTIMIZER, 2, 4}, {MLOS_TRAINING_PHASE_CHECKPOINT, 2, 0}};
    for (const Got& g : table) {
      CHILD_EXPECT(mlos_training_set_phase(r, g.phase) == MLOS_OK);
      for (pid_t tid : {late.tid(), current_tid()}) {
        CHILD_EXPECT(task_nice(tid) == base);
        CHILD_EXPECT(task_ioprio(tid).io_class == g.io_class);
        CHILD_EXPECT(task_ioprio(tid).level == g.io_level);
      }
    }
    mlos_training_placement_t pl = {.struct_size = sizeof pl};
    CHILD_EXPECT(mlos_training_get_placement(r, &pl) == MLOS_OK);
    CHILD_EXPECT((pl.degraded_effects & MLOS_EFFECT_CPU_PRIORITY) != 0);
    CHILD_EXPECT((pl.degraded_effects & MLOS_EFFECT_IO_PRIORITY) == 0);
    CHILD_EXPECT(mlos_training_release_resources(r) == MLOS_OK);
    CHILD_EXPECT(task_ioprio(late.tid()).io_class == 0);  // restored
    return failures;
  });
  EXPECT_EQ(rc, 0);
}
