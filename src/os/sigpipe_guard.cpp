// SPDX-License-Identifier: Apache-2.0
#include "os/sigpipe_guard.h"

#include <pthread.h>
#include <time.h>

namespace mlos::os {

namespace {

sigset_t only_sigpipe() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  return s;
}

bool sigpipe_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

SigpipeGuard::SigpipeGuard() {
  const sigset_t pipe = only_sigpipe();
  pthread_sigmask(SIG_BLOCK, &pipe, &old_mask_);
  was_pending_ = sigpipe_pending();
}

SigpipeGuard::~SigpipeGuard() {
  if (!was_pending_ && sigpipe_pending()) {
    const sigset_t pipe = only_sigpipe();
    const timespec zero{0, 0};
    (void)sigtimedwait(&pipe, nullptr, &zero);  // consume the one our writes raised
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void block_sigpipe_in_this_thread() {
  const sigset_t pipe = only_sigpipe();
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
}

}  // namespace mlos::os
