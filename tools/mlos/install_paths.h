/* SPDX-License-Identifier: Apache-2.0 */
// Where mlos finds its sibling programs and data: beside its own real
// location, whatever the prefix and however it was started, then where the
// build's prefix put them (os/install_location.h).
#pragma once

#include <string>
#include <vector>

namespace mlos::cli {

// mlos-policyhost: $MLOS_POLICY_HOST, else beside mlos, else the
// configured prefix's path (returned even when nothing is there, for the
// error that names it).
std::string policy_host();

// The policy directory of this mlos when no daemon names one:
// $MLOS_POLICY_DIR, else beside mlos (the Python package's
// mlos_training/mlos/policies, a build tree's policies/, an installed
// prefix's lib/mlos/policies), else the configured prefix's, which is also
// the answer when none exists.
std::string default_policy_dir();

// The GPU sharing interposer (libmlos-gpushare.so): $MLOS_GPUSHARE_LIBRARY
// when set (a bundle, an unusual install), else beside mlos, else the
// configured prefix's; "" when none exists (a build without cuda.h).
std::string gpushare_library();

// Where `mlos daemon` looks for mlosd before PATH: beside mlos (a build
// tree's bin/, an installed prefix's sbin/), then the configured prefix's.
std::vector<std::string> mlosd_candidates();

}  // namespace mlos::cli
