/* SPDX-License-Identifier: Apache-2.0 */
// Where an installed mlOS keeps its policy modules, their host and the
// data-loading helper: the one definition mlosd's config defaults, the CLI
// and libmlos read.
#pragma once

#include <string>

namespace mlos::policy {

// ${CMAKE_INSTALL_FULL_LIBDIR}/mlos/policies
std::string installed_policy_dir();
// ${CMAKE_INSTALL_FULL_LIBEXECDIR}/mlos/mlos-policyhost
std::string installed_policy_host();
// ${CMAKE_INSTALL_FULL_LIBEXECDIR}/mlos/mlos-dataload
std::string installed_dataload_helper();

}  // namespace mlos::policy
