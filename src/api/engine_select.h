// Picks the claim broker for MLOS_MODE (auto|embedded|daemon).
#pragma once

#include <memory>

#include "core/status.h"
#include "engine/claim_broker.h"

namespace mlos {

// auto/unset/embedded: the process's LedgerClaimBroker (created once).
// daemon: UNSUPPORTED until mlosd exists. Anything else: INVALID_ARGUMENT.
Result<std::shared_ptr<ClaimBroker>> select_broker();

}  // namespace mlos
