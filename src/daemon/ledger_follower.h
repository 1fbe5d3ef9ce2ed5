/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's view of the embedded engine's claim ledger, the book processes
// use when mlosd is not there (or when told MLOS_MODE=embedded). mlosd
// adopts its live claims as jobs so that it never grants their CPUs again,
// and forgets them when they leave the ledger; see JobManager::follow_ledger.
//
// Reading is cheap when nothing changed: one stat(2) of the ledger file,
// compared with the last one read (inode, size, modification time: the
// ledger is replaced by rename on every update).
#pragma once

#include <sys/types.h>

#include <ctime>
#include <optional>
#include <string>

#include "core/claim_ledger.h"
#include "core/status.h"
#include "os/ledger_file.h"

namespace mlos::daemon {

class LedgerFollower {
 public:
  // `dir`: the runtime directory whose claims.json mlosd follows.
  explicit LedgerFollower(std::string dir) : file_(std::move(dir)) {}

  // The ledger's live claims if the file changed since the last call (the
  // first call always reads), nullopt if it did not. A missing file reads
  // as an empty ledger; an untrusted directory or a corrupt file is an
  // error (and is read again at the next change).
  std::optional<Result<ClaimLedger>> read_if_changed();
  const std::string& dir() const { return file_.dir(); }

 private:
  struct Stamp {
    ino_t ino = 0;
    off_t size = -1;
    timespec mtime{};
    bool operator==(const Stamp& o) const {
      return ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
    }
  };
  os::LedgerFile file_;
  std::optional<Stamp> last_;
};

}  // namespace mlos::daemon
