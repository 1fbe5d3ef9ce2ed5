/* SPDX-License-Identifier: Apache-2.0 */
// Where the malloc replacements that `mlos run` may preload live. They come
// from Debian packages (libtcmalloc-minimal4, libjemalloc2) installed by
// scripts/setup.sh; nothing is downloaded or built. A missing one is a
// reason given to the user, never an error of the run.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mlos::tune {

// The directories the dynamic loader searches by default on this system:
// the one libc was loaded from (the multiarch directory on Debian), its
// /usr twin, and /usr/local/lib. MLOS_ALLOCATOR_DIRS (colon-separated)
// replaces them, for tests and for allocators installed elsewhere.
std::vector<std::string> allocator_search_dirs();

// The first readable shared object of `allocator` ("tcmalloc" or
// "jemalloc") in `dirs`, by the sonames Debian installs; nullopt if none
// (or the name is unknown).
std::optional<std::string> find_allocator(const std::string& allocator, const std::vector<std::string>& dirs);

// The Debian package that provides `allocator` ("" if unknown).
std::string allocator_package(const std::string& allocator);

// True if LD_PRELOAD `preload` already names a malloc replacement (tcmalloc,
// jemalloc, mimalloc): the user chose one and it is left alone.
bool preloads_an_allocator(const std::string& preload);

}  // namespace mlos::tune
