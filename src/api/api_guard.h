/* SPDX-License-Identifier: Apache-2.0 */
// What every C entry point shares: running a body with no exception
// escaping, finding the job behind a resources handle, and filling
// versioned output structs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "api/handle_registry.h"
#include "api/last_error.h"
#include "engine/job.h"
#include "mlos/training.h"
#include "os/process_self.h"

namespace mlos::api {

// Runs `body` (returning an int code), turning exceptions into codes.
template <class F>
int guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return record_error(make_error(MLOS_ERR_NO_MEMORY, "out of memory inside libmlos"));
  } catch (const std::exception& e) {
    return record_error(make_error(MLOS_ERR_SYSTEM, std::string("internal error: ") + e.what()));
  } catch (...) {
    return record_error(make_error(MLOS_ERR_SYSTEM, "internal error"));
  }
}

// A C caller may pass any int where an enum is declared; in C++ reading an
// out-of-range value as the enum is undefined, so the API reads the bits.
template <class E>
int raw_enum(const E& value) {
  static_assert(sizeof(E) == sizeof(int));
  int raw = 0;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

inline int invalid_handle() {
  return record_error(make_error(MLOS_ERR_INVALID_HANDLE, "NULL, released or unknown resources handle"));
}

// The job behind `handle`, or nullptr (last error set) if the handle is
// unknown or belongs to the parent of this forked process: a child must not
// renice, re-pin or release its parent's threads and claim.
inline std::shared_ptr<Job> find_job(const mlos_training_resources_t* handle) {
  auto job = HandleRegistry::instance().find(handle);
  if (!job) {
    invalid_handle();
    return nullptr;
  }
  if (job->creator_pid() != os::self_pid()) {
    record_error(make_error(MLOS_ERR_INVALID_HANDLE, "handle belongs to process " +
                                                         std::to_string(job->creator_pid()) +
                                                         "; a forked child must request its own resources"));
    return nullptr;
  }
  return job;
}

// Copies `ours` into a caller struct whose first field is struct_size,
// honouring both sizes: an older caller gets the prefix it asked for, a
// newer one gets what this library knows and nothing more. Bytes past
// sizeof(T) are never written: struct_size is a claim the library cannot
// check, and a wrong one (too big, or UINT32_MAX) must not let it write past
// the caller's object. A newer caller zero-initialises its struct to tell
// unknown fields apart.
template <class T>
int fill_versioned(T* out, const T& ours, size_t first_version_size) {
  const uint32_t size = out->struct_size;
  if (size < first_version_size) {
    return record_error(make_error(MLOS_ERR_VERSION_MISMATCH,
                                   "struct_size " + std::to_string(size) + " is smaller than the first version (" +
                                       std::to_string(first_version_size) + "); set it to sizeof the struct"));
  }
  const size_t n = std::min<size_t>(size, sizeof(T));
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(uint32_t), reinterpret_cast<const char*>(&ours) + sizeof(uint32_t),
              n - sizeof(uint32_t));
  return MLOS_OK;
}

// The get_notes buffer contract (training.h) for `text`: *needed is its
// length plus the NUL; INVALID_ARGUMENT when needed is NULL or buf is NULL
// with len > 0; BUFFER_TOO_SMALL (buf left an empty string when len > 0)
// when it does not fit. `what` names the text in that message.
inline int copy_text_out(const std::string& text, char* buf, size_t len, size_t* needed, const char* what) {
  if (!needed || (!buf && len > 0)) {
    return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "needed must not be NULL; buf may be NULL only with len 0"));
  }
  *needed = text.size() + 1;
  if (len < *needed) {
    if (len > 0) buf[0] = '\0';
    return record_error(
        make_error(MLOS_ERR_BUFFER_TOO_SMALL, std::string(what) + " need " + std::to_string(*needed) + " bytes"));
  }
  std::memcpy(buf, text.c_str(), *needed);
  return MLOS_OK;
}

}  // namespace mlos::api
