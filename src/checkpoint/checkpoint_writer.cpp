// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/checkpoint_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_names.h"
#include "checkpoint/checkpoint_retention.h"
#include "checkpoint/durable_checkpoint_file.h"
#include "core/phase_policy.h"
#include "os/kernel.h"
#include "os/log_sink.h"

namespace mlos::checkpoint {

namespace {

Error dir_error(int err, const std::string& what) {
  const int code = err == ENOENT || err == ENOTDIR ? MLOS_ERR_NOT_FOUND
                   : err == EACCES || err == EPERM ? MLOS_ERR_PERMISSION
                                                   : MLOS_ERR_SYSTEM;
  return make_sys_error(err, what, code);
}

}  // namespace

Result<std::unique_ptr<CheckpointWriter>> CheckpointWriter::open(const std::string& dir, WriterOptions options) {
  if (!valid_prefix(options.prefix)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "checkpoint prefix \"" + options.prefix + "\" is not " + kPrefixRule);
  }
  if (options.keep_last == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "keep_last must be >= 1");
  os::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return dir_error(errno, "cannot open checkpoint directory " + dir);
  const std::string lock_path = path_in(dir, lock_name(options.prefix));
  os::UniqueFd lock_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!lock_fd.valid()) return dir_error(errno, "cannot create lock file " + lock_path);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return make_sys_error(err, "another checkpoint writer has prefix \"" + options.prefix + "\" in " + dir +
                                     " open (" + lock_path + " is locked)");
    }
    return make_sys_error(err, "cannot lock " + lock_path);
  }
  // Holding the lock, every temporary of this prefix is a crashed writer's.
  auto temps = list_temp_files(dir, options.prefix);
  if (!temps) return temps.error();
  for (const auto& name : *temps) {
    const std::string path = path_in(dir, name);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return make_sys_error(errno, "cannot remove stale temporary " + path);
    }
    log_message(MLOS_LOG_INFO, "removed stale checkpoint temporary " + path);
  }
  auto existing = list_checkpoints(dir, options.prefix);
  if (!existing) return existing.error();
  const uint64_t newest = existing->empty() ? 0 : existing->back().sequence;
  if (newest == UINT64_MAX) return make_error(MLOS_ERR_INVALID_ARGUMENT, "checkpoint sequence numbers exhausted");
  return std::unique_ptr<CheckpointWriter>(
      new CheckpointWriter(dir, std::move(options), std::move(dir_fd), std::move(lock_fd), newest + 1));
}

CheckpointWriter::CheckpointWriter(std::string dir, WriterOptions options, os::UniqueFd dir_fd,
                                   os::UniqueFd lock_fd, uint64_t next_sequence)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      dir_fd_(std::move(dir_fd)),
      lock_fd_(std::move(lock_fd)),
      first_sequence_(next_sequence),
      staging_(options_.job, options_.allow_unlocked_staging),
      next_sequence_(next_sequence),
      completed_sequence_(next_sequence - 1) {}

CheckpointWriter::~CheckpointWriter() { (void)close(); }

void CheckpointWriter::wait_idle(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return !busy_ && !sync_active_; });
}

Status CheckpointWriter::write_and_retain(uint64_t sequence, const void* data, size_t size) {
  const auto start = std::chrono::steady_clock::now();
  Status s = write_checkpoint_file(dir_, dir_fd_.get(), options_.prefix, sequence, data, size);
  if (!s) return s;
  // Durable now: the job's activity gets the payload and the writing time
  // (retention's deletions are not part of the save). options_.job keeps
  // the job, and with it its phase sink, alive for this writer's life.
  if (options_.job) {
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    options_.job->count_checkpoint(size, static_cast<uint64_t>(took.count()));
  }
  auto removed = remove_old_checkpoints(dir_, options_.prefix, options_.keep_last);
  // The save itself succeeded; a file retention could not delete is only
  // logged (it is retried after the next save).
  if (!removed) log_message(MLOS_LOG_WARN, removed.error().describe());
  std::lock_guard lock(mu_);
  if (removed) stats_.retention_deleted += *removed;
  return s;
}

void CheckpointWriter::finish(std::unique_lock<std::mutex>& /*held*/, uint64_t sequence, const Status& s,
                              bool reported) {
  completed_sequence_ = sequence;
  if (s) {
    ++stats_.saves_succeeded;
    stats_.last_saved_sequence = sequence;
  } else {
    ++stats_.saves_failed;
    failures_.emplace(sequence, Failure{s.error(), reported});
  }
  cv_.notify_all();
}

Result<uint64_t> CheckpointWriter::save(const void* data, size_t size) {
  std::unique_lock lock(mu_);
  wait_idle(lock);
  if (closed_) return make_error(MLOS_ERR_INVALID_HANDLE, "checkpoint writer is closed");
  sync_active_ = true;
  const uint64_t sequence = next_sequence_++;
  lock.unlock();
  Status s = write_and_retain(sequence, data, size);
  lock.lock();
  sync_active_ = false;
  finish(lock, sequence, s, /*reported=*/true);
  if (!s) return s.error();
  return sequence;
}

Status CheckpointWriter::start_thread_locked() {
  if (thread_.joinable()) return Status::Ok();
  try {
    thread_ = std::thread([this] { thread_main(); });
  } catch (const std::system_error& e) {
    return make_sys_error(e.code().value(), "cannot start the checkpoint writer thread");
  }
  return Status::Ok();
}

Result<uint64_t> CheckpointWriter::save_async(const void* data, size_t size) {
  std::unique_lock lock(mu_);
  wait_idle(lock);
  if (closed_) return make_error(MLOS_ERR_INVALID_HANDLE, "checkpoint writer is closed");
  if (Status t = start_thread_locked(); !t) return t.error();
  busy_ = true;
  lock.unlock();
  // The staging memory is ours until pending_ hands it to the thread.
  Status reserved = staging_.reserve(size);
  if (reserved) reserved = staging_.pin();  // unpinned once written
  if (reserved) std::memcpy(staging_.data(), data, size);
  lock.lock();
  stats_.staging_bytes = staging_.capacity();
  stats_.staging_locked = staging_.locked();
  if (!reserved) {
    busy_ = false;
    cv_.notify_all();
    return reserved.error();
  }
  const uint64_t sequence = next_sequence_++;
  pending_ = PendingSave{sequence, size};
  cv_.notify_all();
  return sequence;
}

void CheckpointWriter::thread_main() {
  pthread_setname_np(pthread_self(), "mlos-ckpt");
  // The CHECKPOINT phase's I/O priority, from the one phase table.
  os::Kernel& kernel = os::linux_kernel();
  Status io = kernel.set_io_priority(kernel.current_tid(),
                                     PhasePolicy::defaults().rule(MLOS_TRAINING_PHASE_CHECKPOINT).io);
  if (!io) log_message(MLOS_LOG_WARN, "checkpoint writer thread keeps its I/O priority: " + io.error().describe());
  std::unique_lock lock(mu_);
  stats_.io_priority_applied = io.ok();
  for (;;) {
    cv_.wait(lock, [&] { return pending_.has_value() || stop_; });
    if (!pending_) return;
    const PendingSave job = *pending_;
    lock.unlock();
    Status s = write_and_retain(job.sequence, staging_.data(), job.size);
    staging_.unpin();
    lock.lock();
    pending_.reset();
    busy_ = false;
    finish(lock, job.sequence, s, /*reported=*/false);
  }
}

Status CheckpointWriter::wait(uint64_t ticket, int timeout_ms) {
  std::unique_lock lock(mu_);
  if (ticket < first_sequence_ || ticket >= next_sequence_) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "ticket " + std::to_string(ticket) +
                                                     " was not issued by this checkpoint writer");
  }
  auto done = [&] { return completed_sequence_ >= ticket; };
  if (timeout_ms < 0) {
    cv_.wait(lock, done);
  } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), done)) {
    return make_error(MLOS_ERR_TIMEOUT, "checkpoint " + std::to_string(ticket) + " not finished after " +
                                            std::to_string(timeout_ms) + " ms");
  }
  auto it = failures_.find(ticket);
  if (it == failures_.end()) return Status::Ok();
  it->second.reported = true;
  return it->second.error;
}

Status CheckpointWriter::close() {
  std::unique_lock lock(mu_);
  if (!closed_) {
    wait_idle(lock);
    closed_ = true;
    stop_ = true;
    cv_.notify_all();
    lock.unlock();
    if (thread_.joinable()) thread_.join();
    lock.lock();
  }
  for (auto& [sequence, failure] : failures_) {
    if (!failure.reported) {
      failure.reported = true;
      return failure.error;
    }
  }
  return Status::Ok();
}

WriterInfo CheckpointWriter::info() const {
  std::lock_guard lock(mu_);
  WriterInfo out = stats_;
  out.next_sequence = next_sequence_;
  return out;
}

}  // namespace mlos::checkpoint
