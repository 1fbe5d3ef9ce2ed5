// SPDX-License-Identifier: Apache-2.0
// A header-only C++ wrapper over mlos/checkpoint.h. It throws nothing:
// every call returns the C API's int code (MLOS_OK or a negative
// mlos_error_t; mlos_last_error_message() has the details).
//
//   mlos::CheckpointWriter w;
//   if (w.open("/ckpt") != MLOS_OK) ...;
//   uint64_t ticket;
//   w.save_async(state.data(), state.size(), &ticket);  // state reusable now
//   ...
//   int rc = w.wait(ticket);
//
//   mlos::LoadedCheckpoint c;
//   if (mlos::load_latest_checkpoint("/ckpt", nullptr, &c) == MLOS_OK) use(c.data(), c.size());
#ifndef MLOS_CHECKPOINT_HPP_
#define MLOS_CHECKPOINT_HPP_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "mlos/checkpoint.h"

namespace mlos {

class CheckpointWriter {
 public:
  CheckpointWriter() = default;
  // Closes, waiting for a pending async save; its error is lost here, so
  // call close() to see it.
  ~CheckpointWriter() { (void)close(); }
  CheckpointWriter(CheckpointWriter&& other) noexcept : w_(std::exchange(other.w_, nullptr)) {}
  CheckpointWriter& operator=(CheckpointWriter&& other) noexcept {
    if (this != &other) {
      (void)close();
      w_ = std::exchange(other.w_, nullptr);
    }
    return *this;
  }
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Closes any writer held first. options may be nullptr.
  int open(const char* dir, const mlos_checkpoint_options_t* options = nullptr) noexcept {
    int rc = close();
    if (rc != MLOS_OK) return rc;
    return mlos_checkpoint_writer_open(dir, options, &w_);
  }
  // mlos_checkpoint_writer_close; MLOS_OK when nothing is open.
  int close() noexcept { return mlos_checkpoint_writer_close(std::exchange(w_, nullptr)); }
  bool is_open() const noexcept { return w_ != nullptr; }

  int save(const void* data, size_t size, uint64_t* sequence = nullptr) noexcept {
    return mlos_checkpoint_save(w_, data, size, sequence);
  }
  int save_async(const void* data, size_t size, uint64_t* ticket) noexcept {
    return mlos_checkpoint_save_async(w_, data, size, ticket);
  }
  int wait(uint64_t ticket, int timeout_ms = -1) noexcept { return mlos_checkpoint_wait(w_, ticket, timeout_ms); }
  int info(mlos_checkpoint_writer_info_t* out) const noexcept {
    out->struct_size = sizeof *out;
    return mlos_checkpoint_writer_get_info(w_, out);
  }
  mlos_checkpoint_writer_t* get() const noexcept { return w_; }

 private:
  mlos_checkpoint_writer_t* w_ = nullptr;
};

// A loaded payload that frees itself.
class LoadedCheckpoint {
 public:
  LoadedCheckpoint() = default;
  ~LoadedCheckpoint() { mlos_checkpoint_free_data(data_); }
  LoadedCheckpoint(LoadedCheckpoint&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(o.size_), sequence_(o.sequence_), skipped_(o.skipped_) {}
  LoadedCheckpoint& operator=(LoadedCheckpoint&& o) noexcept {
    if (this != &o) {
      mlos_checkpoint_free_data(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = o.size_;
      sequence_ = o.sequence_;
      skipped_ = o.skipped_;
    }
    return *this;
  }
  LoadedCheckpoint(const LoadedCheckpoint&) = delete;
  LoadedCheckpoint& operator=(const LoadedCheckpoint&) = delete;

  const void* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  uint64_t sequence() const noexcept { return sequence_; }
  // Newer checkpoints that failed verification and were skipped.
  uint32_t damaged_skipped() const noexcept { return skipped_; }

 private:
  friend int load_latest_checkpoint(const char*, const char*, LoadedCheckpoint*) noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  uint64_t sequence_ = 0;
  uint32_t skipped_ = 0;
};

// mlos_checkpoint_load_latest into *out (replacing what it held).
inline int load_latest_checkpoint(const char* dir, const char* prefix, LoadedCheckpoint* out) noexcept {
  LoadedCheckpoint fresh;
  int rc = mlos_checkpoint_load_latest(dir, prefix, &fresh.data_, &fresh.size_, &fresh.sequence_, &fresh.skipped_);
  if (rc == MLOS_OK) *out = std::move(fresh);
  return rc;
}

}  // namespace mlos

#endif  // MLOS_CHECKPOINT_HPP_
