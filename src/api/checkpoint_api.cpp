// SPDX-License-Identifier: Apache-2.0
// The C ABI of include/mlos/checkpoint.h over checkpoint::CheckpointWriter
// and the checkpoint reader.
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "api/api_guard.h"
#include "api/handle_table.h"
#include "api/owned_handle.h"
#include "api/versioned_struct.h"
#include "checkpoint/checkpoint_names.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/durable_checkpoint_file.h"
#include "mlos/checkpoint.h"
#include "os/process_self.h"

using mlos::make_error;
using mlos::record_error;
using mlos::api::guarded;

namespace {

// What a writer handle stands for.
struct WriterEntry {
  std::unique_ptr<mlos::checkpoint::CheckpointWriter> impl;
  pid_t creator_pid = 0;
  ~WriterEntry() {
    // A forked child's copy has no thread to stop or join: only forget it.
    if (creator_pid != mlos::os::self_pid()) (void)impl.release();
  }
};

using WriterTable = mlos::HandleTable<WriterEntry, mlos_checkpoint_writer_t, 0x636b /* "ck" */>;

WriterTable& writers() {
  static auto* table = new WriterTable;  // leaked: writers may be closed from static destructors
  return *table;
}

constexpr uint32_t kKnownFlags = MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING;

int invalid_argument(const std::string& why) { return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, why)); }

// The writer behind a handle (kept alive while the caller uses it), or
// nullptr (last error set) for NULL, a closed or made-up handle, or a writer
// inherited from the parent of this forked process.
std::shared_ptr<WriterEntry> find_writer(const mlos_checkpoint_writer_t* handle) {
  return mlos::api::owned_by_this_process(
      writers().find(handle), [](const WriterEntry& e) { return e.creator_pid; },
      mlos::api::HandleKind{"checkpoint writer", "closed", "open its own"});
}

// guarded() around `body(writer)` for a live writer of this process.
template <class F>
int with_writer(const mlos_checkpoint_writer_t* handle, F&& body) noexcept {
  return guarded([&] {
    auto entry = find_writer(handle);
    if (!entry) return mlos_last_error();
    return body(*entry->impl);
  });
}

// Runs a save of either kind after the argument checks they share, storing
// its sequence in *out when out is not NULL.
template <class Save>
int checked_save(const void* data, size_t size, uint64_t* out, Save&& save) {
  if (data == nullptr || size == 0) return invalid_argument("checkpoint data is NULL or size is 0");
  mlos::Result<uint64_t> seq = save();
  if (!seq) return record_error(seq.error());
  if (out != nullptr) *out = *seq;
  return static_cast<int>(MLOS_OK);
}

}  // namespace

extern "C" {

int mlos_checkpoint_writer_open(const char* dir, const mlos_checkpoint_options_t* options,
                                mlos_checkpoint_writer_t** writer) {
  return guarded([&] {
    if (writer != nullptr) *writer = nullptr;
    if (dir == nullptr || writer == nullptr) return invalid_argument("dir and writer must not be NULL");
    mlos::checkpoint::WriterOptions wo;
    wo.keep_last = MLOS_CHECKPOINT_DEFAULT_KEEP_LAST;
    if (options != nullptr) {
      auto given = mlos::api::read_versioned(options);
      if (!given) return record_error(given.error());
      options = &*given;
      if (options->flags & ~kKnownFlags) return invalid_argument("unknown checkpoint option flags");
      if (options->keep_last != 0) wo.keep_last = options->keep_last;
      if (options->prefix != nullptr) wo.prefix = options->prefix;
      wo.allow_unlocked_staging = options->flags & MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING;
      if (options->resources != nullptr) {
        wo.job = mlos::api::find_job(options->resources);
        if (!wo.job) return mlos_last_error();
      }
    }
    auto impl = mlos::checkpoint::CheckpointWriter::open(dir, std::move(wo));
    if (!impl) return record_error(impl.error());
    auto entry = std::make_shared<WriterEntry>();
    entry->impl = std::move(impl.value());
    entry->creator_pid = mlos::os::self_pid();
    *writer = writers().add(std::move(entry));
    return static_cast<int>(MLOS_OK);
  });
}

int mlos_checkpoint_writer_close(mlos_checkpoint_writer_t* writer) {
  return guarded([&] {
    if (writer == nullptr) return static_cast<int>(MLOS_OK);
    auto entry = writers().take(writer);
    if (!entry) return record_error(make_error(MLOS_ERR_INVALID_HANDLE, "closed or unknown checkpoint writer"));
    if (entry->creator_pid != mlos::os::self_pid()) return static_cast<int>(MLOS_OK);  // forgotten
    return mlos::to_code(entry->impl->close());
  });
}

int mlos_checkpoint_save(mlos_checkpoint_writer_t* writer, const void* data, size_t size, uint64_t* sequence) {
  return with_writer(writer, [&](mlos::checkpoint::CheckpointWriter& w) {
    return checked_save(data, size, sequence, [&] { return w.save(data, size); });
  });
}

int mlos_checkpoint_save_async(mlos_checkpoint_writer_t* writer, const void* data, size_t size, uint64_t* ticket) {
  return with_writer(writer, [&](mlos::checkpoint::CheckpointWriter& w) {
    if (ticket == nullptr) return invalid_argument("ticket must not be NULL");
    return checked_save(data, size, ticket, [&] { return w.save_async(data, size); });
  });
}

int mlos_checkpoint_wait(mlos_checkpoint_writer_t* writer, uint64_t ticket, int timeout_ms) {
  return with_writer(writer,
                     [&](mlos::checkpoint::CheckpointWriter& w) { return mlos::to_code(w.wait(ticket, timeout_ms)); });
}

int mlos_checkpoint_writer_get_info(const mlos_checkpoint_writer_t* writer, mlos_checkpoint_writer_info_t* info) {
  return with_writer(writer, [&](mlos::checkpoint::CheckpointWriter& w) {
    if (info == nullptr) return invalid_argument("info is NULL");
    const mlos::checkpoint::WriterInfo i = w.info();
    mlos_checkpoint_writer_info_t ours{};
    ours.struct_size = sizeof ours;
    ours.next_sequence = i.next_sequence;
    ours.last_saved_sequence = i.last_saved_sequence;
    ours.saves_succeeded = i.saves_succeeded;
    ours.saves_failed = i.saves_failed;
    ours.retention_deleted = i.retention_deleted;
    ours.staging_bytes = i.staging_bytes;
    ours.staging_locked = i.staging_locked;
    ours.io_priority_applied = i.io_priority_applied;
    return mlos::api::fill_versioned(info, ours);
  });
}

int mlos_checkpoint_load_latest(const char* dir, const char* prefix, void** data, size_t* size, uint64_t* sequence,
                                uint32_t* damaged_skipped) {
  return guarded([&] {
    if (data != nullptr) *data = nullptr;
    if (size != nullptr) *size = 0;
    if (dir == nullptr || data == nullptr || size == nullptr) {
      return invalid_argument("dir, data and size must not be NULL");
    }
    const std::string p = prefix != nullptr ? prefix : mlos::checkpoint::kDefaultPrefix;
    if (!mlos::checkpoint::valid_prefix(p)) {
      return invalid_argument("checkpoint prefix \"" + p + "\" is not " + mlos::checkpoint::kPrefixRule);
    }
    auto loaded = mlos::checkpoint::load_latest_checkpoint(dir, p);
    if (!loaded) return record_error(loaded.error());
    *data = loaded->data;
    *size = loaded->size;
    if (sequence != nullptr) *sequence = loaded->sequence;
    if (damaged_skipped != nullptr) *damaged_skipped = loaded->damaged_skipped;
    return static_cast<int>(MLOS_OK);
  });
}

void mlos_checkpoint_free_data(void* data) { std::free(data); }

int mlos_checkpoint_verify_file(const char* path, uint64_t* sequence, size_t* size) {
  return guarded([&] {
    if (path == nullptr) return invalid_argument("path must not be NULL");
    auto footer = mlos::checkpoint::verify_checkpoint_file(path);
    if (!footer) return record_error(footer.error());
    if (sequence != nullptr) *sequence = footer->sequence;
    if (size != nullptr) *size = static_cast<size_t>(footer->payload_length);
    return static_cast<int>(MLOS_OK);
  });
}

int mlos_checkpoint_write_file(const char* path, const void* data, size_t size) {
  return guarded([&] {
    if (path == nullptr || *path == '\0') return invalid_argument("path must not be NULL or empty");
    if (data == nullptr && size > 0) return invalid_argument("data is NULL with size > 0");
    return mlos::to_code(mlos::checkpoint::write_file_durably(path, data, size));
  });
}

}  // extern "C"
