/* SPDX-License-Identifier: Apache-2.0 */
// The start-up settings `mlos run` chooses between for a command: which
// malloc the process runs with, that malloc's options, and for Python how
// OpenMP threads wait. Each candidate
// is a complete set; run_tuning.h decides which one a run gets.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mlos::tune {

// How a command is classed for its default: its interpreter, as far as the
// command line and the executable's #! line say.
enum class CommandKind { kPython, kOther };

// `argv[0]` named python*, torchrun or yolo, or resolved on PATH to a file
// whose #! line names python: kPython.
CommandKind classify_command(const std::vector<std::string>& argv);
const char* command_kind_name(CommandKind kind);

struct LaunchCandidate {
  std::string name;       // "tcmalloc", "tcmalloc+omp-passive", "glibc-retain", "glibc", "jemalloc"
  std::string allocator;  // library to preload (allocator_library.h); "" for glibc's own malloc
  // The allocator's (and OpenMP's) options, set only where the user has not set them.
  std::vector<std::pair<std::string, std::string>> env;
};

// The candidates for `kind`, its measured default first
// (docs/tuning.md, "Defaults": tcmalloc for Python, glibc for the rest).
std::vector<LaunchCandidate> candidates_for(CommandKind kind);

}  // namespace mlos::tune
