/* SPDX-License-Identifier: Apache-2.0 */
// What a checkpoint writer needs from the job it saves for: staging memory
// out of the job's budget, and a place to count each save. The engine's Job
// provides it; declaring it here keeps the checkpoint writer below the
// engine (it never includes engine/).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace mlos::checkpoint {

class CheckpointJob {
 public:
  virtual ~CheckpointJob() = default;
  // A checkpoint buffer, locked; with `allow_unlocked`, an ordinary
  // prefaulted one when the kernel refuses the lock (LOCK_LIMIT), counted
  // against the job's memory budget the same way. *locked says which.
  // INVALID_HANDLE once the job is released.
  virtual Result<void*> alloc_checkpoint_buffer(size_t size, bool allow_unlocked, bool* locked) = 0;
  virtual Status free_checkpoint_buffer(void* buffer) = 0;
  // While pinned (a save is reading it), the buffer is not unmapped under
  // the reader: the job's release waits for the unpin. Pins nest.
  virtual Status pin_checkpoint_buffer(void* buffer) = 0;
  virtual void unpin_checkpoint_buffer(void* buffer) = 0;
  // The job's memory budget in bytes (0: none). INVALID_HANDLE once released.
  virtual Result<uint64_t> checkpoint_budget() const = 0;
  // A save made durable: its payload bytes and the time from the start of
  // writing to durable. Lock-free, from any thread, even after release.
  virtual void count_checkpoint(uint64_t bytes, uint64_t ns) const = 0;
};

}  // namespace mlos::checkpoint
