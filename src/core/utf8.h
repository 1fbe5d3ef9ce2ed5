/* SPDX-License-Identifier: Apache-2.0 */
// UTF-8 checks for text that comes from outside (argv, environment, file
// names, other processes) on its way into JSON, which must be UTF-8:
// nlohmann::json::dump() throws type_error 316 on anything else.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mlos {

// The offset of the first byte that does not start a well-formed UTF-8
// sequence (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF),
// or std::string_view::npos when `text` is valid UTF-8.
size_t first_invalid_utf8(std::string_view text);

// The length (1-4) of the well-formed UTF-8 sequence that starts at
// text[at], or 0 when none starts there (at < text.size()).
size_t utf8_sequence_length(std::string_view text, size_t at);

// `text` with each ill-formed sequence replaced by U+FFFD, so that
// valid_utf8(x) == x exactly when x is valid UTF-8.
std::string valid_utf8(std::string_view text);

}  // namespace mlos
