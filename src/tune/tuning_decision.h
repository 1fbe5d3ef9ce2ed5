/* SPDX-License-Identifier: Apache-2.0 */
// Which start-up settings a command gets, decided across its runs, in the
// manner of an autotuner: an allocator is fixed when a process starts, so
// each run of the same command is one trial. A run measures its time per
// training step from its phase profile (the library records it at release,
// api/tuning_evidence_at_release.h); the next run uses what the evidence says.
//
// Pure: the caller reads the evidence and applies the choice.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mlos::tune {

// What is known of one candidate for one command.
struct CandidateRecord {
  int runs_started = 0;          // runs `mlos run` started with it
  std::vector<double> step_ms;   // time per training step of the runs that reported one, oldest first
};

struct Decision {
  std::string candidate;
  bool exploring = false;  // a trial of a candidate not yet measured for this command
  std::string reason;      // one sentence for --explain and the profile
};

// `order`: the candidates of the command's class, its measured default
// first; those missing from `available` (library not installed) are
// skipped. Rules, in order:
//  1. the default has no measured run: use it (a command that never
//     reports steps, e.g. one that does not train, stays there);
//  2. a candidate never started for this command: try it once;
//  3. otherwise the lowest median of the last kWindow step times, if it
//     beats the default's by more than kDefaultMargin (a single trial
//     on a shared machine is that noisy; the default was measured on the
//     suite's workloads), else the default; a candidate started but never
//     measured (its runs crashed or were killed) is not tried again.
// `available` must hold at least one candidate of `order`.
Decision decide(const std::vector<std::string>& order, const std::vector<std::string>& available,
                const std::map<std::string, CandidateRecord>& records);

constexpr size_t kWindow = 5;  // step times per candidate that count
constexpr double kDefaultMargin = 0.05;  // how much faster than the default another candidate must be

// The median of the last kWindow entries (0 if none).
double recent_median(const std::vector<double>& step_ms);

}  // namespace mlos::tune
