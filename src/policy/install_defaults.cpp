// SPDX-License-Identifier: Apache-2.0
#include "policy/install_defaults.h"

// Set on this file by CMakeLists.txt from the install prefix.
#ifndef MLOS_DEFAULT_POLICY_DIR
#error "MLOS_DEFAULT_POLICY_DIR must be defined by the build"
#endif
#ifndef MLOS_DEFAULT_POLICY_HOST
#error "MLOS_DEFAULT_POLICY_HOST must be defined by the build"
#endif

#ifndef MLOS_DEFAULT_DATALOAD_HELPER
#error "MLOS_DEFAULT_DATALOAD_HELPER must be defined by the build"
#endif

#ifndef MLOS_DEFAULT_GPUSHARE_LIBRARY
#error "MLOS_DEFAULT_GPUSHARE_LIBRARY must be defined by the build"
#endif

namespace mlos::policy {

std::string installed_policy_dir() { return MLOS_DEFAULT_POLICY_DIR; }
std::string installed_policy_host() { return MLOS_DEFAULT_POLICY_HOST; }
std::string installed_dataload_helper() { return MLOS_DEFAULT_DATALOAD_HELPER; }
std::string installed_gpushare_library() { return MLOS_DEFAULT_GPUSHARE_LIBRARY; }

}  // namespace mlos::policy
