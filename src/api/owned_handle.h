/* SPDX-License-Identifier: Apache-2.0 */
// The check every C entry point makes on a handle: the object behind it,
// created by this process. A forked child inherits its parent's handles but
// not what they stand for (a job's threads and claim, a writer's lock, a
// pool's memory, a loader's helper), so it gets INVALID_HANDLE, as NULL, a
// closed or a made-up handle do.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "api/last_error.h"
#include "core/status.h"
#include "os/process_self.h"

namespace mlos::api {

// How a kind of handle is named in the errors: "NULL, <ended> or unknown
// <what>", "<what> belongs to process N; a forked child must <own_instead>".
struct HandleKind {
  const char* what;         // "checkpoint writer"
  const char* ended;        // "closed"
  const char* own_instead;  // "open its own"
};

// `found` (what the handle table holds, or nullptr) if `creator_of(*found)`
// is this process; else nullptr with INVALID_HANDLE recorded as the last
// error.
template <class Object, class CreatorOf>
std::shared_ptr<Object> owned_by_this_process(std::shared_ptr<Object> found, CreatorOf creator_of,
                                              const HandleKind& kind) {
  if (!found) {
    record_error(make_error(MLOS_ERR_INVALID_HANDLE,
                            std::string("NULL, ") + kind.ended + " or unknown " + kind.what));
    return nullptr;
  }
  const pid_t creator = creator_of(*found);
  if (creator != os::self_pid()) {
    record_error(make_error(MLOS_ERR_INVALID_HANDLE, std::string(kind.what) + " belongs to process " +
                                                         std::to_string(creator) + "; a forked child must " +
                                                         kind.own_instead));
    return nullptr;
  }
  return found;
}

}  // namespace mlos::api
