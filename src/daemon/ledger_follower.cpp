// SPDX-License-Identifier: Apache-2.0
#include "daemon/ledger_follower.h"

#include <sys/stat.h>

#include <cerrno>

namespace mlos::daemon {

std::optional<Result<ClaimLedger>> LedgerFollower::read_if_changed() {
  Stamp now;  // a missing file has the default stamp
  struct stat st {};
  if (stat(file_.path().c_str(), &st) == 0) {
    now = Stamp{st.st_ino, st.st_size, st.st_mtim};
  } else if (errno != ENOENT) {
    now.size = -2;  // unreadable: differs from every readable stamp
  }
  if (last_ && *last_ == now) return std::nullopt;
  last_ = now;
  return file_.read();
}

}  // namespace mlos::daemon
