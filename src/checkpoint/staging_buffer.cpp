// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/staging_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "os/kernel.h"
#include "os/log_sink.h"

namespace mlos::checkpoint {

namespace {

size_t round_to_pages(size_t bytes) {
  const size_t page = os::linux_kernel().page_size();
  return (bytes + page - 1) / page * page;
}

}  // namespace

StagingBuffer::StagingBuffer(std::shared_ptr<CheckpointJob> job, bool allow_unlocked)
    : job_(std::move(job)), allow_unlocked_(allow_unlocked) {}

StagingBuffer::~StagingBuffer() { unmap(Mapping{data_, capacity_, locked_, from_job_}); }

Result<StagingBuffer::Mapping> StagingBuffer::map(size_t bytes) {
  if (job_) {
    // The job's own unlocked fallback keeps the bytes counted against its budget.
    bool locked = true;
    Result<void*> p = job_->alloc_checkpoint_buffer(bytes, allow_unlocked_, &locked);
    if (!p) return p.error();
    if (!locked) {
      log_message(MLOS_LOG_WARN, "checkpoint staging memory of the job is not locked (the kernel refused the lock); "
                                 "staging in unlocked memory as MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING allows");
    }
    return Mapping{*p, bytes, locked, true};
  }
  Result<void*> p = os::linux_kernel().map_locked(bytes);
  if (p) return Mapping{*p, bytes, true, false};
  if (p.error().code != MLOS_ERR_LOCK_LIMIT || !allow_unlocked_) return p.error();
  void* raw = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (raw == MAP_FAILED) {
    return make_sys_error(errno, "mmap of " + std::to_string(bytes) + " staging bytes", MLOS_ERR_NO_MEMORY);
  }
  log_message(MLOS_LOG_WARN, "checkpoint staging memory is not locked (" + p.error().describe() +
                                 "); staging in unlocked memory as MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING allows");
  return Mapping{raw, bytes, false, false};
}

void StagingBuffer::unmap(const Mapping& m) {
  if (m.data == nullptr) return;
  if (m.from_job) {
    // Fails only when the job was released, which already freed the buffer.
    (void)job_->free_checkpoint_buffer(m.data);
  } else {
    (void)os::linux_kernel().unmap(m.data, m.bytes);
  }
}

Status StagingBuffer::pin() { return from_job_ ? job_->pin_checkpoint_buffer(data_) : Status::Ok(); }

void StagingBuffer::unpin() {
  if (from_job_) job_->unpin_checkpoint_buffer(data_);
}

Status StagingBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_) return Status::Ok();
  const size_t rounded = round_to_pages(bytes);
  if (rounded < bytes) return make_error(MLOS_ERR_INVALID_ARGUMENT, "staging size overflows");
  if (job_) {
    // A save that could never fit the budget fails before the old mapping
    // is touched.
    auto budget = job_->checkpoint_budget();
    if (!budget) return budget.error();
    if (*budget > 0 && rounded > *budget) {
      return make_error(MLOS_ERR_INSUFFICIENT_MEMORY, "checkpoint staging of " + std::to_string(rounded) +
                                                          " bytes exceeds the job's memory_bytes " +
                                                          std::to_string(*budget));
    }
  }
  auto fresh = map(rounded);
  if (!fresh && fresh.error().code == MLOS_ERR_INSUFFICIENT_MEMORY && data_ != nullptr) {
    // The old mapping counts against the same budget: free it and retry.
    unmap(Mapping{data_, capacity_, locked_, from_job_});
    data_ = nullptr;
    capacity_ = 0;
    fresh = map(rounded);
  }
  if (!fresh) return fresh.error();
  unmap(Mapping{data_, capacity_, locked_, from_job_});
  data_ = fresh->data;
  capacity_ = fresh->bytes;
  locked_ = fresh->locked;
  from_job_ = fresh->from_job;
  return Status::Ok();
}

}  // namespace mlos::checkpoint
