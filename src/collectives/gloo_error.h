/* SPDX-License-Identifier: Apache-2.0 */
// Gloo reports failures as exceptions; mlOS as codes.
#pragma once

#include <exception>
#include <string>

#include "core/status.h"

namespace mlos::collectives {

// `what` failed with Gloo's exception `e`: TIMEOUT when Gloo timed out,
// else PEER_LOST (a connection broke). The message says the group is
// broken, as it then is (process_group.h's failure contract).
Error from_gloo(const std::string& what, const std::exception& e);

}  // namespace mlos::collectives
