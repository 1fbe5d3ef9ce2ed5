/* SPDX-License-Identifier: Apache-2.0 */
// Memory of a process, as the kernel counts it.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "core/status.h"

namespace mlos::os {

// Resident bytes of process `pid` (/proc/<pid>/statm, second field).
Result<uint64_t> process_resident_bytes(pid_t pid);

}  // namespace mlos::os
