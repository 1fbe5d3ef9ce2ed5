/* SPDX-License-Identifier: Apache-2.0 */
// Loading a policy's shared object and checking it against the ABI in
// include/mlos/policy.h. Runs only inside mlos-policyhost (a policy's code,
// constructors included, never runs in mlosd or a training process).
#pragma once

#include <string>

#include "core/status.h"
#include "mlos/policy.h"
#include "policy/policy_protocol.h"

namespace mlos::policy {

// dlopen()s `path` (RTLD_NOW | RTLD_LOCAL) and returns its policy, whose code
// stays loaded for the life of the process. Errors, each naming the file:
//  - NOT_FOUND: dlopen failed (missing file or dependency, bad ELF);
//  - INVALID_ARGUMENT: no MLOS_POLICY_ENTRY symbol, the entry returned
//    NULL, no init, an invalid name, or a name other than `expected_name`
//    (a file may not pose as another policy);
//  - VERSION_MISMATCH: abi_version differs from MLOS_POLICY_ABI_VERSION or
//    struct_size is smaller than MLOS_POLICY_SIZE_V1.
// The module's table is returned as this host's version of it: the
// module's prefix, the fields past it NULL / 0.
// `module_fd`, when not -1, is `path` opened before the host dropped its
// identity: the module is loaded through it (/proc/self/fd), so a host
// that became nobody still loads a file in a directory only root may enter
// (root's home, a 0700 checkout). Messages name `path`.
Result<mlos_policy_t> load_policy_module(const std::string& path, const std::string& expected_name,
                                                int module_fd = -1);

// The policy's self-description (strings copied; NULLs become "").
PolicyInfo describe(const mlos_policy_t& policy);

}  // namespace mlos::policy
