/* SPDX-License-Identifier: Apache-2.0 */
// Where libmlos finds the programs it starts for a job (mlos-policyhost,
// mlos-dataload): the same search for each, so a wheel, an installed
// prefix and the build tree all work without configuration.
#pragma once

#include <string>

#include "core/status.h"

namespace mlos {

// `path` without "..", "." or symlinks in it (as it is shown in messages);
// unchanged if it cannot be resolved.
std::string resolved_path(const std::string& path);

// The directory of the libmlos in use (dladdr), "" if unknown.
std::string library_dir();

// The first executable of: $env_var; next to libmlos (L): L/mlos/<name>
// (the Python package), L/../libexec/mlos/<name> (an installed prefix),
// L/../bin/<name> (the build tree); `installed` (the configured prefix's).
// Symlinks and ".." resolved. UNSUPPORTED naming every place looked at and
// `env_var` when none is.
Result<std::string> find_helper_binary(const std::string& name, const char* env_var, const std::string& installed);

}  // namespace mlos
