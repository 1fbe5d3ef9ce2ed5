/* SPDX-License-Identifier: Apache-2.0 */
// "Did you mean" for mistyped subcommands and options.
#pragma once

#include <string>
#include <vector>

namespace mlos::cli {

// Edit distance between `a` and `b` (insertions, deletions, substitutions
// and swaps of two neighbouring characters each count 1), case-insensitive.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidates closest to `word`, in their given order, when they are
// close enough to be a typo: at most 1 edit for words of up to 4
// characters, 2 for longer ones (option dashes not counted), and never
// more than half of `word`. Empty when none is.
std::vector<std::string> closest_matches(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean \"a\" or \"b\"?)" style text: "did you mean \"a\"?",
// "did you mean \"a\" or \"b\"?"; "" for no candidates.
std::string did_you_mean(const std::vector<std::string>& matches);

}  // namespace mlos::cli
