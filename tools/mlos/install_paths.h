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

// The policy directory an installed mlosd uses by default
// (${CMAKE_INSTALL_FULL_LIBDIR}/mlos/policies).
std::string default_policy_dir();

}  // namespace mlos::cli
