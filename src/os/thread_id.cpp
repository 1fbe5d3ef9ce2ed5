#include "os/thread_id.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <string>

namespace mlos::os {

Result<pid_t> thread_tid(pthread_t thread) {
  if (pthread_equal(thread, pthread_self())) return static_cast<pid_t>(syscall(SYS_gettid));
  clockid_t clock = 0;
  int rc = pthread_getcpuclockid(thread, &clock);
  if (rc != 0) return make_sys_error(rc, "pthread_getcpuclockid", MLOS_ERR_NO_SUCH_THREAD);
  // CPUCLOCK_PERTHREAD_MASK (4) must be set and the clock kind must be SCHED (2).
  if ((clock & 7) != 6) {
    return make_error(MLOS_ERR_UNSUPPORTED, "unexpected thread CPU clock id encoding " + std::to_string(clock));
  }
  pid_t tid = static_cast<pid_t>(~(static_cast<long>(clock) >> 3));
  struct stat st {};
  std::string path = "/proc/self/task/" + std::to_string(tid);
  if (tid <= 0 || stat(path.c_str(), &st) != 0) {
    return make_error(MLOS_ERR_NO_SUCH_THREAD, "thread " + std::to_string(tid) + " is not a live thread of this process");
  }
  return tid;
}

}  // namespace mlos::os
