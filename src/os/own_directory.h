/* SPDX-License-Identifier: Apache-2.0 */
// A directory where this user keeps state that no other user may forge,
// replace or redirect: the runtime directory (claims ledger, GPU share
// files) and what lies below it. /tmp/mlos-<uid> is where a user without
// XDG_RUNTIME_DIR (cron, su, batch steps, containers) keeps it, and anyone
// can create that name first, so a directory found there proves nothing
// until it passes this check.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/status.h"

namespace mlos::os {

// OK when `path` is a directory itself (not a symbolic link: a link's
// owner in /tmp could point it elsewhere between a check and a use),
// owned by this user (effective uid) or root, and writable by neither its
// group nor others. Else PERMISSION naming `what`, the path and the reason
// ("runtime directory /tmp/mlos-1000 belongs to uid 65534, ..."); a path
// that cannot be looked at, or is not a directory: SYSTEM. Only `path`
// itself is checked: a caller checks each directory it relies on (the
// runtime directory, then gpushare/ in it), from the top down.
Status check_own_directory(const std::string& path, const std::string& what);

// mkdir -p `path` (missing components get `mode`), then
// check_own_directory(path, what).
Status make_own_directory(const std::string& path, mode_t mode, const std::string& what);

}  // namespace mlos::os
