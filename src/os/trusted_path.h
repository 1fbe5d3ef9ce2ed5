/* SPDX-License-Identifier: Apache-2.0 */
// The trust test mlosd (root) applies to a file before it runs or loads
// it: only root can have written the file, or replaced it or any
// directory on the way to it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

namespace mlos::os {

// "" when `path` (symlinks and ".." resolved) and every directory above it
// up to "/" are owned by root (or by `also_trusted`) and writable by
// neither their group nor others; else why not, naming the first
// component that fails ("/opt/x is writable by its group or by others")
// or that cannot be resolved. A directory above the path that is sticky
// (/tmp) and root's may be writable by all: there only an entry's owner
// can rename or remove it, and the entry below it passed already. The
// path itself gets no such pass.
std::string untrusted_reason(const std::string& path, std::optional<uid_t> also_trusted = std::nullopt);

// "" when `st` (an fstat of an opened file) is owned by root (or by
// `also_trusted`) and writable by neither its group nor others; else why
// not ("owned by uid 1000, not root").
std::string untrusted_owner_reason(const struct stat& st, std::optional<uid_t> also_trusted = std::nullopt);

}  // namespace mlos::os
