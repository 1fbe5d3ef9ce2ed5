/* SPDX-License-Identifier: Apache-2.0 */
// A policy's readahead/cache hint on a file (mlos_policy_file_advice_t),
// applied by whoever hosts the policy (mlosd, or libmlos in embedded mode).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace mlos::policy {

// posix_fadvise()s bytes [offset, offset + length) of `path` (length 0: to
// the end) for a job owned by `uid`: only a
// regular file that uid owns or that everyone may read (mlosd reads as
// root; a policy must not warm or drop another user's files). Symlinks are
// not followed. NOT_FOUND (cannot open), INVALID_ARGUMENT (not a regular
// file, unknown advice), PERMISSION (the ownership rule).
Status advise_file(const std::string& path, uid_t uid, uint64_t advice, uint64_t offset = 0, uint64_t length = 0);

}  // namespace mlos::policy
