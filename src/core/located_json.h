/* SPDX-License-Identifier: Apache-2.0 */
// JSON text for files people write (mlosd's config): comments allowed
// (// and /* */), and errors that say where, as "line:column", both for
// syntax errors and for a key whose value a later check refuses.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos {

struct TextPosition {
  size_t line = 0;    // 1-based
  size_t column = 0;  // 1-based, in bytes
};

struct LocatedJson {
  nlohmann::json value;
  // Where each object key starts, by JSON pointer ("/quotas/max_cpus").
  std::map<std::string, TextPosition> keys;

  // "L:C" of the key at `pointer`, or of its nearest enclosing key that has
  // one; "" when none (the document's root).
  std::string where(std::string pointer) const;
};

// `key` as one token of a JSON pointer ('~' and '/' escaped, RFC 6901).
std::string json_pointer_token(const std::string& key);

// The line and column of byte `offset` (0-based) of `text`.
TextPosition position_of(const std::string& text, size_t offset);

// Parses `text`. A syntax error is INVALID_ARGUMENT "L:C: what is wrong".
Result<LocatedJson> parse_located_json(const std::string& text);

}  // namespace mlos
