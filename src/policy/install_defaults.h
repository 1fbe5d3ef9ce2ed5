/* SPDX-License-Identifier: Apache-2.0 */
// Where an installed mlOS keeps its policy modules, their host and the
// data-loading helper and the GPU sharing interposer: the one definition mlosd's config defaults, the CLI
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
// ${CMAKE_INSTALL_FULL_LIBDIR}/mlos/libmlos-gpushare.so (the GPU sharing interposer)
std::string installed_gpushare_library();

}  // namespace mlos::policy
