/* SPDX-License-Identifier: Apache-2.0 */
// The trust test mlosd (root) applies to a file before it runs or loads
// it: only root can have written the file, or replaced it or any
// directory on the way to it.
#pragma once

#include <string>

namespace mlos::os {

// "" when `path` (symlinks and ".." resolved) and every directory above it
// up to "/" are owned by root and writable by neither their group nor
// others; else why not, naming the first component that fails ("/opt/x
// is writable by its group or by others") or that cannot be resolved.
std::string untrusted_reason(const std::string& path);

}  // namespace mlos::os
