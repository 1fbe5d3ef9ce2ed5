/* SPDX-License-Identifier: Apache-2.0 */
// Where mlosd's registry lives on disk: a snapshot (registry.json, a
// CheckedJsonFile) plus a journal of the changes since (registry.journal,
// an AppendJournal of put/remove entries). A change costs one appended line
// and one fdatasync, whatever the number of jobs; the snapshot is rewritten
// (and the journal emptied) only when the journal has outgrown it, at start
// and at a clean stop, so rewriting stays amortised O(1) per change.
//
// Crash safety: every change is durable before the daemon replies. A crash
// mid-append leaves a torn last line, which is dropped (it was never
// acknowledged); a crash mid-compaction leaves the new snapshot with the
// old journal, and replaying it changes nothing (entries are idempotent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/job_registry.h"
#include "os/append_journal.h"
#include "os/checked_json_file.h"

namespace mlos::daemon {

class RegistryStore {
 public:
  // Files `registry.json` and `registry.journal` in `dir`.
  explicit RegistryStore(const std::string& dir);

  std::string path() const { return snapshot_.path(); }
  const std::string& journal_path() const { return journal_.path(); }

  // The snapshot with the journal replayed; nullopt when neither file
  // exists. STATE_CORRUPT naming the file and fault when either cannot be
  // trusted (both are left untouched).
  Result<std::optional<JobRegistry>> load();
  // One record granted or changed / records forgotten, durably.
  Status put(const JobRecord& record, uint64_t next_id);
  Status remove(const std::vector<uint64_t>& ids);
  // Writes `all` as the snapshot and empties the journal.
  Status compact(const JobRegistry& all);
  // True when the journal has grown past max(256 KiB, twice the snapshot).
  bool compaction_due() const;

 private:
  os::CheckedJsonFile snapshot_;
  os::AppendJournal journal_;
  uint64_t snapshot_bytes_ = 0;  // at the last load or compaction
};

}  // namespace mlos::daemon
