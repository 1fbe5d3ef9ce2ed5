/* SPDX-License-Identifier: Apache-2.0 */
// What every C entry point shares: running a body with no exception
// escaping and finding the job behind a resources handle (versioned
// structs: versioned_struct.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "api/handle_registry.h"
#include "api/last_error.h"
#include "api/owned_handle.h"
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
  return owned_by_this_process(
      HandleRegistry::instance().find(handle), [](const Job& job) { return job.creator_pid(); },
      HandleKind{"resources handle", "released", "request its own resources"});
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
