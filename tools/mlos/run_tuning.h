/* SPDX-License-Identifier: Apache-2.0 */
// mlos run's start-up tuning (docs/tuning.md): before CMD is exec'd, the
// allocator and its options are chosen for CMD from what earlier runs of
// the same command measured, and set in the environment CMD inherits
// (LD_PRELOAD, the allocator's variables, MLOS_TUNE_*). Never fails the
// run: what cannot be done (an allocator not installed, a store that cannot
// be used, an allocator the user preloads) is a note.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlos::cli {

struct TuningReport {
  std::string candidate;            // "" when nothing was chosen (see notes)
  std::string reason;
  std::string command_kind;         // "Python" | "other"
  std::string library;              // the preloaded allocator's path ("" for glibc)
  std::vector<std::string> set;     // NAME=VALUE set for CMD
  std::vector<std::string> notes;   // what was skipped, and why
  std::string evidence;             // the file CMD's step times go to ("" if none)

  std::string text() const;         // for --explain, several lines
  nlohmann::json to_json() const;
};

// Chooses and applies. `cpus`: the CPU count of the grant (part of what
// identifies the command).
TuningReport apply_run_tuning(const std::vector<std::string>& command, int cpus);

// --no-tune: CMD starts with the environment as it is; an outer mlos run's
// evidence file is dropped so this run does not count as its trial.
TuningReport skip_run_tuning();

}  // namespace mlos::cli
