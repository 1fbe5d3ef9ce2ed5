/* SPDX-License-Identifier: Apache-2.0 */
// A thread that idles until told to stop, and reports its kernel tid.
#pragma once

#include <pthread.h>

#include <atomic>

#include "integration/proc_observer.h"

namespace mlos_test {

class WorkerThread {
 public:
  WorkerThread() {
    pthread_create(&thread_, nullptr, &WorkerThread::main, this);
    while (tid_.load() == 0) sched_yield();
  }
  ~WorkerThread() {
    stop_ = true;
    pthread_join(thread_, nullptr);
  }
  pthread_t handle() const { return thread_; }
  pid_t tid() const { return tid_.load(); }

 private:
  static void* main(void* arg) {
    auto* self = static_cast<WorkerThread*>(arg);
    self->tid_ = current_tid();
    while (!self->stop_) usleep(1000);
    return nullptr;
  }
  pthread_t thread_{};
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace mlos_test
