#include "api/engine_select.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "engine/ledger_claim_broker.h"

namespace mlos {

Result<std::shared_ptr<ClaimBroker>> select_broker() {
  const char* mode = std::getenv("MLOS_MODE");
  if (mode != nullptr && *mode && strcmp(mode, "auto") != 0 && strcmp(mode, "embedded") != 0) {
    if (strcmp(mode, "daemon") == 0) {
      return make_error(MLOS_ERR_UNSUPPORTED,
                        "MLOS_MODE=daemon: this libmlos has no daemon engine yet (mlosd is not part of this "
                        "version); use MLOS_MODE=embedded or auto");
    }
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      std::string("MLOS_MODE=") + mode + " is not one of auto, embedded, daemon");
  }
  static std::mutex mu;
  static std::optional<Result<std::shared_ptr<ClaimBroker>>> embedded;
  std::lock_guard lock(mu);
  if (!embedded) {
    auto b = LedgerClaimBroker::for_this_process();
    if (b) {
      embedded.emplace(std::shared_ptr<ClaimBroker>(*b));
    } else {
      embedded.emplace(b.error());
    }
  }
  return *embedded;
}

}  // namespace mlos
