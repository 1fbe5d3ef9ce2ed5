/* SPDX-License-Identifier: Apache-2.0 */
// Closing every descriptor of the process but a few: what a process that is
// about to run untrusted code does so that nothing it inherited (a
// listening socket, a log file, a directory) reaches that code.
#pragma once

#include <vector>

#include "core/status.h"

namespace mlos::os {

// Closes every open descriptor not in `keep`, with close_range(2); on a
// kernel without it (before 5.9: ENOSYS), by listing /proc/self/fd. Numbers
// in `keep` that are not open are ignored here (callers check them). Meant
// for a single-threaded process: another thread's descriptors go too.
Status close_descriptors_except(const std::vector<int>& keep);

// The /proc/self/fd fallback on its own, so that tests exercise it on
// kernels that have close_range.
Status close_descriptors_except_by_listing(const std::vector<int>& keep);

}  // namespace mlos::os
