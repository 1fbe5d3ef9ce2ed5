/* SPDX-License-Identifier: Apache-2.0 */
// The async writer's staging memory: one prefaulted, locked mapping that
// holds a copy of the payload while the background thread writes it. Reused
// across saves and grown (never shrunk) when a bigger save arrives.
//
// Memory comes from the process (Kernel::map_locked) or, when the writer was
// opened with a resources handle, from that job's checkpoint buffers, which
// count against its memory_bytes. If locking fails (RLIMIT_MEMLOCK) the
// error is LOCK_LIMIT unless unlocked staging was allowed: then the memory is
// an ordinary prefaulted mapping (the job's unlocked checkpoint buffer,
// still counted against its budget, or process memory) and locked() says so.
#pragma once

#include <cstddef>
#include <memory>

#include "checkpoint/checkpoint_job.h"
#include "core/status.h"

namespace mlos::checkpoint {

class StagingBuffer {
 public:
  // `job` may be null (process memory).
  StagingBuffer(std::shared_ptr<CheckpointJob> job, bool allow_unlocked);
  ~StagingBuffer();
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  // Makes capacity() >= bytes (bytes > 0). Growing maps the new size first
  // when the budget allows, and frees the old mapping; on failure the old
  // mapping is kept unless it had to be freed to make room for the new one.
  // Errors: LOCK_LIMIT, INSUFFICIENT_MEMORY (over the job's memory_bytes),
  // INVALID_HANDLE (the job was released), NO_MEMORY.
  Status reserve(size_t bytes);

  // Marks the staging memory as read by a save in flight, so that releasing
  // the job waits for it instead of unmapping it under the writer (no-op for
  // process memory). INVALID_HANDLE when the job was released.
  Status pin();
  void unpin();

  void* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  bool locked() const { return locked_; }

 private:
  struct Mapping {
    void* data = nullptr;
    size_t bytes = 0;
    bool locked = false;
    bool from_job = false;
  };
  Result<Mapping> map(size_t bytes);
  void unmap(const Mapping& m);

  std::shared_ptr<CheckpointJob> job_;
  const bool allow_unlocked_;
  void* data_ = nullptr;
  size_t capacity_ = 0;
  bool locked_ = false;
  bool from_job_ = false;
};

}  // namespace mlos::checkpoint
