// SPDX-License-Identifier: Apache-2.0
// The promise that a phase change whose OS settings do not change costs no
// system call (not even a listing of /proc/self/task for threads created
// since the last change), checked by the kernel itself: the calls run in a child under
// a seccomp filter (libseccomp) that kills the process on any system call
// but write and exit. (Strict mode cannot be used: it disables the TSC that
// the vDSO clock reads.)
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "integration/proc_observer.h"
#include "integration/worker_thread.h"

using namespace mlos_test;

namespace {

// The vDSO answers clock_gettime without entering the kernel only with
// these clock sources; elsewhere the monotonic clock is a system call.
bool vdso_clock() {
  std::string cs = read_text("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  return cs == "tsc\n" || cs == "kvm-clock\n" || cs == "arch_sys_counter\n" || cs == "hyperv_clocksource_tsc_page\n";
}

}  // namespace

TEST(SyscallFreePhase, UnchangedSettingsMakeNoSystemCall) {
#if defined(__SANITIZE_ADDRESS__) || defined(MLOS_TEST_UNDER_ASAN)
  GTEST_SKIP() << "the sanitizer runtime makes system calls of its own";
#endif
  if (!vdso_clock()) GTEST_SKIP() << "clock source without vDSO support: the monotonic clock needs a system call";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                            .priority = 0, .exclusive_cpus = false};
    mlos_training_resources_t* res = nullptr;
    if (mlos_training_request_resources(&req, &res) != MLOS_OK) _exit(2);
    if (mlos_training_bind_thread(res, pthread_self(), 0) != MLOS_OK) _exit(3);
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_OPTIMIZER);  // warm every path once
    // Threads created since the last change join the job at the next change
    // that alters settings, not at these unchanged ones.
    WorkerThread late1, late2;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (ctx == nullptr || seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 0) != 0 || seccomp_load(ctx) != 0) {
      _exit(4);
    }
    int bad = 0;
    for (int i = 0; i < 1000; ++i) {
      // FORWARD and OPTIMIZER map to the same settings; repeats are free too.
      bad += mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD) != MLOS_OK;
      bad += mlos_training_set_phase(res, MLOS_TRAINING_PHASE_OPTIMIZER) != MLOS_OK;
      bad += mlos_training_set_phase(res, MLOS_TRAINING_PHASE_OPTIMIZER) != MLOS_OK;
    }
    _exit(bad == 0 ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "child killed by signal " << WTERMSIG(status)
                                    << " (SIGSYS/SIGKILL = a system call was made)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
