// Where an installed mlOS keeps its policy modules and their host: the one
// definition mlosd's config defaults and the CLI both read.
#pragma once

#include <string>

namespace mlos::policy {

// ${CMAKE_INSTALL_FULL_LIBDIR}/mlos/policies
std::string installed_policy_dir();
// ${CMAKE_INSTALL_FULL_LIBEXECDIR}/mlos/mlos-policyhost
std::string installed_policy_host();

}  // namespace mlos::policy
