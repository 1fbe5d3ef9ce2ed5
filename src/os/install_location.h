/* SPDX-License-Identifier: Apache-2.0 */
// Where this process finds the other parts of mlOS (core/install_layout.h):
// from the real location of the binary that holds mlOS's code, whatever the
// prefix and however the program was started (through PATH, a symlink, a
// relative path), then where the build's prefix put them. The one search
// libmlos, mlos and mlosd use (docs/releases.md, "Relocatable installs").
#pragma once

#include <string>

#include "core/install_layout.h"
#include "core/status.h"

namespace mlos::os {

// The real directory of the binary that holds mlOS's own code, from
// /proc/self/maps: libmlos.so.0 in a program that links it (python, a C
// program), the program itself for mlos, mlosd, mlos-policyhost and
// mlos-dataload (they link mlOS in). "" if that cannot be read.
std::string own_binary_dir();

// The install directories the build was configured with, relative to its
// prefix (CMAKE_INSTALL_PREFIX; empty where one was given absolute).
InstallDirs configured_install_dirs();
// `part`'s path under the configured prefix, e.g. /usr/local/libexec/mlos/mlos-policyhost.
std::string configured_install_part_path(InstallPart part);

// Where `part` lies for this process: $`env_var` alone when it is set and
// not empty (nullptr: no variable; one that is not in core/environment.h's
// table aborts, as os::env does); else the candidates beside
// own_binary_dir(), then configured_install_part_path(): the first that
// exists as the part must (a directory; an executable or a readable
// regular file), symlinks and ".." resolved. UNSUPPORTED naming every
// place looked at, and the variable, when none does.
Result<std::string> locate_install_part(InstallPart part, const char* env_var);

// For mlosd, which runs as root what it finds: the first candidate beside
// own_binary_dir() that exists, if it passes untrusted_reason()
// (os/trusted_path.h); else configured_install_part_path(). `note` gets
// the file passed over and why ("" when none was).
std::string locate_trusted_install_part(InstallPart part, std::string* note);

}  // namespace mlos::os
