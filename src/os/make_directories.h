/* SPDX-License-Identifier: Apache-2.0 */
// mkdir -p: creates `path` and every missing parent with `mode`; a
// component that exists already is left as it is. The error names the
// component, as "cannot create <what> <component>".
#pragma once

#include <sys/types.h>

#include <string>

#include "core/status.h"

namespace mlos::os {

Status make_directories(const std::string& path, mode_t mode, const std::string& what);

}  // namespace mlos::os
