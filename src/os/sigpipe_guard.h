/* SPDX-License-Identifier: Apache-2.0 */
// Keeps SIGPIPE from killing the process while a library thread writes to
// sockets it does not own the signal disposition of (Gloo's TCP pairs
// write with plain write/writev, so a peer that died raises SIGPIPE, whose
// default action ends the whole process). Changing the process's
// disposition is the application's business, so instead the signal is
// blocked in the writing thread for the duration, and one it raised there
// is consumed before the mask is restored: the write then fails with
// EPIPE, which Gloo reports as an error.
#pragma once

#include <signal.h>

namespace mlos::os {

class SigpipeGuard {
 public:
  SigpipeGuard();
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_mask_;
  bool was_pending_ = false;  // the thread already had one: not ours to consume
};

// Blocks SIGPIPE in the calling thread for good: for threads that only
// ever run library code, and whose children (which inherit the mask) do
// too, like the thread that creates Gloo's event loop.
void block_sigpipe_in_this_thread();

}  // namespace mlos::os
