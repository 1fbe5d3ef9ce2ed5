/* SPDX-License-Identifier: Apache-2.0 */
// Where mlos finds its sibling programs and data: next to its own binary
// (a build tree's bin/), else where `cmake --install` put them.
#pragma once

#include <string>
#include <vector>

namespace mlos::cli {

// The directory of the running mlos binary ("" if /proc is unreadable).
std::string own_directory();

// Candidates for mlos-policyhost, in order: next to mlos (build/bin), then
// the install location (${CMAKE_INSTALL_FULL_LIBEXECDIR}/mlos).
std::vector<std::string> policy_host_candidates();

// The policy directory of this mlos when no daemon names one: the first
// that exists of policies/ next to mlos (the Python wheel's
// mlos_training/mlos/), ../policies (a build tree's build/bin/), and the
// directory an installed mlosd uses by default
// (${CMAKE_INSTALL_FULL_LIBDIR}/mlos/policies), which is also the answer
// when none exists.
std::string default_policy_dir();

// The GPU sharing interposer (libmlos-gpushare.so): $MLOS_GPUSHARE_LIBRARY
// when set (a bundle, an unusual install), else ../lib next to mlos (a
// build tree), else the install location; "" when none exists (a build
// without cuda.h).
std::string gpushare_library();

}  // namespace mlos::cli
