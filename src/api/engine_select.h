/* SPDX-License-Identifier: Apache-2.0 */
// Picks the claim broker for MLOS_MODE (auto|embedded|daemon).
#pragma once

#include <memory>

#include "core/status.h"
#include "engine/claim_broker.h"

namespace mlos {

// embedded: the process's LedgerClaimBroker (created once).
// daemon: mlosd at $MLOS_DAEMON_SOCKET (default /run/mlos/mlosd.sock);
//   DAEMON_UNAVAILABLE if it does not answer.
// auto or unset: the daemon when it answers at the moment of the request,
//   else embedded.
// Anything else: INVALID_ARGUMENT.
Result<std::shared_ptr<ClaimBroker>> select_broker();

}  // namespace mlos
