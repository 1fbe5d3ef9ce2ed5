/* SPDX-License-Identifier: Apache-2.0 */
// Opening a policy's shared object for a host to load: the file is opened
// and checked here, in the process that starts the host (mlosd, libmlos),
// and the host loads that descriptor, never the path again. So what runs
// is what was checked, even if a directory on the way is swapped right
// after the check (renameat2 RENAME_EXCHANGE).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::policy {

// Opens `path` (O_NOFOLLOW: not a symlink) and checks the open file: a
// regular file owned by root or `also_trusted`, writable by neither group
// nor others; and every directory above it (os::untrusted_reason: owned
// by root or `also_trusted`, not writable by others, sticky root
// directories such as /tmp aside), so that nobody else can have replaced
// a component. PERMISSION naming what failed; NOT_FOUND if it is gone.
Result<os::UniqueFd> open_trusted_module(const std::string& path, std::optional<uid_t> also_trusted);

}  // namespace mlos::policy
