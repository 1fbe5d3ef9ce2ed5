/* SPDX-License-Identifier: Apache-2.0 */
// The claim ledger on disk: <runtime dir>/claims.json, guarded by an flock on
// <runtime dir>/claims.lock. Every update reads, changes and atomically
// replaces the file (write temp, fsync, rename, fsync dir) under the lock, so
// concurrent processes never lose each other's claims and a crash never
// leaves a torn file.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "core/claim_ledger.h"
#include "core/status.h"

namespace mlos::os {

// Where node-local state lives: $MLOS_RUNTIME_DIR, else /run/mlos for root,
// else $XDG_RUNTIME_DIR/mlos, else /tmp/mlos-<uid>.
std::string default_runtime_dir();

class LedgerFile {
 public:
  explicit LedgerFile(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  std::string path() const { return dir_ + "/claims.json"; }

  // Runs `update` on the current ledger while holding the lock, first
  // removing claims of dead processes. If `update` returns true (changed) or
  // dead claims were removed, the new ledger is written before the lock is
  // released. If `update` fails, nothing is written except the pruning.
  // STATE_CORRUPT if the file cannot be parsed: nothing is changed and the
  // message says how to recover.
  Status update(const std::function<Result<bool>(ClaimLedger&)>& update);
  // Called, with the lock held, for each claim of a dead process that
  // update() removes: what the claim left beside the ledger (its policy
  // report) can go with it. Not called by read(), which removes nothing.
  void on_pruned(std::function<void(const Claim&)> f) { on_pruned_ = std::move(f); }

  // Reads the ledger without writing (dead claims are filtered out of the
  // result, not removed from the file). A missing directory or file reads as
  // an empty ledger.
  //
  // Both refuse (PERMISSION) a directory that is not this user's own
  // (os/own_directory.h: owned by another user than this one or root,
  // writable by group or others, or a symbolic link), and never follow a
  // link planted in it.
  Result<ClaimLedger> read() const;

 private:
  Status ensure_dir() const;
  std::string dir_;
  std::function<void(const Claim&)> on_pruned_;
};

}  // namespace mlos::os
