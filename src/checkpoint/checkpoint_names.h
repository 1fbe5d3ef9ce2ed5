/* SPDX-License-Identifier: Apache-2.0 */
// File names of checkpoints: "<prefix>-<20-digit sequence>.mlosckpt", and the
// temporary "<final name>.tmp" a save writes before renaming it. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mlos::checkpoint {

inline constexpr const char* kDefaultPrefix = "ckpt";
inline constexpr size_t kMaxPrefixLength = 64;

// What valid_prefix accepts, for error messages.
inline constexpr const char* kPrefixRule = "[A-Za-z0-9_.-]{1,64}, not starting with '.'";

// [A-Za-z0-9_.-]{1,64}, not starting with '.': no separators, nothing the
// shell or a path treats specially, and no hidden files ("." and ".."
// included), which a user listing the directory would not see.
bool valid_prefix(std::string_view prefix);

std::string final_name(std::string_view prefix, uint64_t sequence);
std::string temp_name(std::string_view prefix, uint64_t sequence);

// The sequence of a final name with this prefix; nullopt for anything else
// (other prefixes, temporaries, the lock file).
std::optional<uint64_t> parse_final_name(std::string_view prefix, std::string_view name);
bool is_temp_name(std::string_view prefix, std::string_view name);

// The writer's lock file in the checkpoint directory.
std::string lock_name(std::string_view prefix);

}  // namespace mlos::checkpoint
