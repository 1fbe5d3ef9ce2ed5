/* SPDX-License-Identifier: Apache-2.0 */
// CheckpointWriter: durable, atomic checkpoints of one prefix in one
// directory, saved synchronously or through one background thread.
//
// Ordering: saves are written one at a time, in sequence order. A save
// (either kind) waits while an async save still owns the staging memory,
// i.e. until the previous async save has been written (or failed); so
// save_async blocks only when the previous async save is still in flight.
//
// Sequence numbers start after the newest checkpoint file found at open and
// increase by one per save that got as far as being given one; a failed
// save uses up its number. An async save's ticket is its sequence number.
//
// Thread-safe; a call that starts after close() returns INVALID_HANDLE (the
// destructor must not race with calls: the C API holds a shared_ptr per
// call). Not usable in a forked child (the thread is not there).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "checkpoint/staging_buffer.h"
#include "checkpoint/checkpoint_job.h"
#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::checkpoint {

struct WriterOptions {
  std::string prefix = "ckpt";
  uint32_t keep_last = 3;        // >= 1
  // Staging from this job's checkpoint buffers, and each save made durable
  // counted in its activity (Job::count_checkpoint: payload bytes, time
  // from the start of writing to durable). Null: neither.
  std::shared_ptr<CheckpointJob> job;
  bool allow_unlocked_staging = false;
};

struct WriterInfo {
  uint64_t next_sequence = 0;
  uint64_t last_saved_sequence = 0;  // 0 = none saved by this writer yet
  uint64_t saves_succeeded = 0;
  uint64_t saves_failed = 0;
  uint64_t retention_deleted = 0;    // files removed by keep_last
  size_t staging_bytes = 0;
  bool staging_locked = false;       // meaningful when staging_bytes > 0
  bool io_priority_applied = false;  // background thread got CHECKPOINT's I/O priority
};

class CheckpointWriter {
 public:
  // Takes an exclusive lock on the directory for this prefix, removes
  // temporaries a crashed writer left, and continues the sequence.
  // Errors: INVALID_ARGUMENT (bad prefix, keep_last 0), NOT_FOUND (no such
  // directory), PERMISSION, SYSTEM (also: another writer holds the lock,
  // errno EWOULDBLOCK).
  static Result<std::unique_ptr<CheckpointWriter>> open(const std::string& dir, WriterOptions options);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Durable on success; returns the sequence. Errors: IO.
  Result<uint64_t> save(const void* data, size_t size);
  // Returns once `data` is copied into staging memory; the ticket is the
  // sequence. Errors: LOCK_LIMIT, INSUFFICIENT_MEMORY, NO_MEMORY, SYSTEM;
  // none of them uses up a sequence number.
  Result<uint64_t> save_async(const void* data, size_t size);
  // The result of save `ticket` (async or not). A negative timeout waits
  // forever. Errors: INVALID_ARGUMENT (not issued by this writer), TIMEOUT,
  // IO (that save failed).
  Status wait(uint64_t ticket, int timeout_ms);
  // Waits for the pending async save, stops the thread, and returns the
  // first async failure no wait() has reported. Idempotent.
  Status close();

  WriterInfo info() const;
  const std::string& dir() const { return dir_; }
  const std::string& prefix() const { return options_.prefix; }

 private:
  CheckpointWriter(std::string dir, WriterOptions options, os::UniqueFd dir_fd, os::UniqueFd lock_fd,
                   uint64_t next_sequence);

  struct Failure {
    Error error;
    bool reported;
  };
  struct PendingSave {
    uint64_t sequence;
    size_t size;
  };

  // Writes the file, then applies retention; records the outcome.
  Status write_and_retain(uint64_t sequence, const void* data, size_t size);
  void finish(std::unique_lock<std::mutex>& lock, uint64_t sequence, const Status& s, bool reported);
  Status start_thread_locked();
  void thread_main();
  // Waits until no save owns the writer (mu_ held).
  void wait_idle(std::unique_lock<std::mutex>& lock);

  const std::string dir_;
  const WriterOptions options_;
  const os::UniqueFd dir_fd_;
  const os::UniqueFd lock_fd_;
  const uint64_t first_sequence_;
  StagingBuffer staging_;  // owned by whoever set busy_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;         // an async save owns the staging memory
  bool sync_active_ = false;  // a synchronous save is writing
  bool stop_ = false;
  bool closed_ = false;
  uint64_t next_sequence_;
  uint64_t completed_sequence_;  // every sequence <= this has finished
  std::optional<PendingSave> pending_;
  std::map<uint64_t, Failure> failures_;
  WriterInfo stats_;
  std::thread thread_;
};

}  // namespace mlos::checkpoint
