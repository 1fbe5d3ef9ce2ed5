/* SPDX-License-Identifier: Apache-2.0 */
// Helpers shared by the cgroup v1 and v2 drivers (internal).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mlos::os::cgroup_detail {

// PIDs in cgroup.procs text (one per line).
std::vector<pid_t> parse_pids(const std::string& text);
// A decimal number, surrounding whitespace ignored; nullopt otherwise.
std::optional<uint64_t> parse_u64(const std::string& text);
// Value of "key N" in a flat-keyed file such as cpu.stat.
std::optional<uint64_t> keyed_value(const std::string& text, const std::string& key);

// `origin` (a cgroup path as /proc/<pid>/cgroup gives it: "/a/b", "/" for
// the root) as a path relative to the hierarchy's root ("" for the root);
// nullopt if it is not absolute or has "." or ".." components, or lies in
// or under `job_path` (the cgroup being emptied).
std::optional<std::string> origin_path(const std::string& origin, const std::string& job_path);

}  // namespace mlos::os::cgroup_detail
