/* SPDX-License-Identifier: Apache-2.0 */
// `mlos top`'s interactive view, drawn with ncurses: the header, per-CPU
// meters marked with the letter of the job on each CPU, and the job list
// (phase bar, memory, pressure), with keys to sort, filter, get help and
// quit (top_keys.h). What is shown comes from TopModel; this file only
// draws it and reads keys.
#pragma once

#include <csignal>
#include <functional>
#include <optional>

#include "top_model.h"

namespace mlos::cli {

struct TopScreenOptions {
  double interval = 1.0;  // seconds between refreshes
  std::string socket;     // shown when mlosd is unavailable
};

// Takes the terminal (stdin/stdout), calls `fetch` for new data now,
// every `interval` seconds and on the space key, and draws `model` until
// q or F10, or until `quit` is set (SIGINT, SIGTERM). Returns nullopt when
// the terminal cannot be used (e.g. no terminfo entry for $TERM): nothing
// was drawn and the caller falls back to the plain table; else the exit
// code (0).
std::optional<int> run_top_screen(const TopScreenOptions& options, TopModel& model,
                                  const std::function<void(TopModel&)>& fetch, const volatile sig_atomic_t& quit);

}  // namespace mlos::cli
