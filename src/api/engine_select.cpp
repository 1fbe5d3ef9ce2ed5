// SPDX-License-Identifier: Apache-2.0
#include "api/engine_select.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "engine/daemon_claim_broker.h"
#include "engine/ledger_claim_broker.h"
#include "os/environment.h"
#include "protocol/daemon_client.h"

namespace mlos {

namespace {

// Each engine is created once per process and kept: a broker holds the
// process's topology, envelope and (daemon) connection.
template <class Broker>
Result<std::shared_ptr<ClaimBroker>> once(std::optional<Result<std::shared_ptr<ClaimBroker>>>& slot, bool keep_errors) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (!slot || (!keep_errors && !slot->ok())) {
    auto b = Broker::for_this_process();
    if (b) {
      slot.emplace(std::shared_ptr<ClaimBroker>(*b));
    } else {
      slot.emplace(b.error());
    }
  }
  return *slot;
}

Result<std::shared_ptr<ClaimBroker>> embedded() {
  static std::optional<Result<std::shared_ptr<ClaimBroker>>> slot;
  return once<LedgerClaimBroker>(slot, true);
}

// An unreachable daemon is not cached: it may start later.
Result<std::shared_ptr<ClaimBroker>> daemon_engine() {
  static std::optional<Result<std::shared_ptr<ClaimBroker>>> slot;
  return once<DaemonClaimBroker>(slot, false);
}

}  // namespace

Result<std::shared_ptr<ClaimBroker>> select_broker() {
  const char* mode = os::env("MLOS_MODE");
  const bool is_auto = mode == nullptr || !*mode || strcmp(mode, "auto") == 0;
  if (!is_auto && strcmp(mode, "embedded") != 0 && strcmp(mode, "daemon") != 0) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      std::string("MLOS_MODE=") + mode + " is not one of auto, embedded, daemon");
  }
  if (!is_auto && strcmp(mode, "embedded") == 0) return embedded();
  if (!is_auto) return daemon_engine();
  // auto: no socket file means no daemon, without trying to connect. Only
  // a daemon that is not there is replaced by the embedded ledger: one that
  // answers and refuses (quota, too many clients), or is saturated, would
  // otherwise be bypassed, and "exclusive" CPUs granted outside its
  // arbitration.
  struct stat st{};
  if (stat(protocol::default_socket_path().c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    auto d = daemon_engine();
    if (d || !protocol::nobody_listens(d.error())) return d;
  }
  return embedded();
}

}  // namespace mlos
