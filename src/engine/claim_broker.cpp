// SPDX-License-Identifier: Apache-2.0
#include "engine/claim_broker.h"

#include "engine/local_pressure_feed.h"
#include "os/process_self.h"

namespace mlos {

Result<std::unique_ptr<PressureFeed>> ClaimBroker::pressure_feed(const Grant& /*grant*/, uint64_t memory_bytes,
                                                                 const MemoryThresholds& thresholds) {
  return std::unique_ptr<PressureFeed>(std::make_unique<LocalPressureFeed>(os::self_pid(), memory_bytes, thresholds));
}

Result<Placement> ClaimBroker::plan(const ClaimRequest& /*request*/) {
  return make_error(MLOS_ERR_UNSUPPORTED, std::string("the ") + engine() + " engine cannot plan without claiming");
}

Result<std::vector<std::string>> ClaimBroker::request_policy(uint64_t /*claim_id*/, const std::string& /*name*/,
                                                             const nlohmann::json& /*config*/) {
  return no_policy_service();
}

Status ClaimBroker::release_policy(uint64_t /*claim_id*/, const std::string& /*name*/) { return no_policy_service(); }

Result<PolicyAdvice> ClaimBroker::advice(uint64_t /*claim_id*/) { return no_policy_service(); }

}  // namespace mlos
