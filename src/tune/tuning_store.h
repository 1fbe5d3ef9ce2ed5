/* SPDX-License-Identifier: Apache-2.0 */
// The per-command memory of `mlos run`'s tuning: one directory per command
// (argv, working directory and CPU count, hashed), holding
//   command.json         what the command was, for people
//   <candidate>.jsonl    one line per run started with the candidate
//                        ({"started": unix seconds}, written by mlos run)
//                        and per measured job of such a run
//                        ({"steps": n, "step_ms": x}, written by libmlos at
//                        release, api/tuning_evidence_at_release.h)
// Lines are appended with one write each (O_APPEND), so concurrent runs
// and ranks never interleave within a line; a line that does not parse (a
// torn or foreign one) is skipped, never an error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "tune/tuning_decision.h"

namespace mlos::tune {

// MLOS_TUNE_DIR, else /var/lib/mlos/tune for root, else
// $XDG_STATE_HOME/mlos/tune or ~/.local/state/mlos/tune.
std::string default_tune_dir();

// 16 hex digits naming the command.
std::string command_key(const std::vector<std::string>& argv, const std::string& cwd, int cpus);

class TuningStore {
 public:
  // Creates `dir` (0700) if missing. PERMISSION if it belongs to another
  // user (other than root) or others may write to it: its evidence could
  // then be forged.
  static Result<TuningStore> open(const std::string& dir);

  // Creates the command's directory and command.json (once).
  Status describe(const std::string& key, const std::vector<std::string>& argv, const std::string& cwd) const;
  // Every candidate's record for the command (empty if it never ran).
  std::map<std::string, CandidateRecord> records(const std::string& key) const;
  // Appends a "started" line for `candidate`.
  Status note_start(const std::string& key, const std::string& candidate) const;
  // The file a run with `candidate` reports its step times to.
  std::string evidence_path(const std::string& key, const std::string& candidate) const;

  const std::string& dir() const { return dir_; }

 private:
  explicit TuningStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// Appends one line (plus newline) to `path` in one write, creating it 0600;
// never follows a symbolic link.
Status append_line(const std::string& path, const std::string& line);

}  // namespace mlos::tune
