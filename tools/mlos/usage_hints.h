/* SPDX-License-Identifier: Apache-2.0 */
// Usage errors explained: a mistyped subcommand or option named with the
// closest valid ones ("did you mean"), and CMD's own options reaching
// `mlos run` because `--` is missing. Works on the CLI11 app that parses
// the arguments, so the names offered are always the real ones.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mlos::cli {

struct UsageProblem {
  enum class Kind { kSubcommand, kOption };
  Kind kind;
  std::string path;     // "mlos", "mlos policy", "mlos run": where it happened
  std::string message;  // the whole line, without the trailing newline
};

// The first unknown subcommand or option in `args` (argv without the
// program name, and without the first "--" and what follows it), walking
// `root`'s subcommands as CLI11 does. An option whose value is the next
// word skips it. Positional words of `command_app` (mlos run's CMD, given
// without "--") are not subcommands, and an unknown option after them gets
// the hint that it belongs to mlos. nullopt when every word is known (the
// parser's own message then says what is wrong).
std::optional<UsageProblem> find_usage_problem(const CLI::App& root, const std::vector<std::string>& args,
                                               const CLI::App* command_app);

}  // namespace mlos::cli
