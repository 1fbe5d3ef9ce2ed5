// SPDX-License-Identifier: Apache-2.0
/* libmlos.so is built from the mlos_internal archive (linked whole); CMake
 * needs at least one source of its own for the shared library target. */
#include "mlos/version.h"
