/* SPDX-License-Identifier: Apache-2.0 */
// The skeleton every section of mlosd's JSON config shares: the section
// must be an object; its keys are read one by one into a copy of what is
// configured now, and the copy replaces it only if every key read, so a
// config refused whole changes nothing (a reload keeps the old settings).
#pragma once

#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos {

// Merges the object `section` into `current`: `read_key(next, key, value)`
// reads one key into `next`, throwing std::invalid_argument (what is
// wrong, the key named) or returning a refusal as a Status, which is
// passed on as it is. INVALID_ARGUMENT `not_object` when `section` is not
// an object; a thrown message gets `prefix` in front. `refused_key`, when
// given, names the key that was refused ("" on success).
template <class Config, class ReadKey>
Status merge_config_section(Config& current, const nlohmann::json& section, const std::string& not_object,
                            const std::string& prefix, ReadKey&& read_key, std::string* refused_key = nullptr) {
  if (!section.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, not_object);
  Config next = current;
  try {
    for (const auto& [key, value] : section.items()) {
      if (refused_key != nullptr) *refused_key = key;
      if (Status s = read_key(next, key, value); !s) return s;
    }
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, prefix + e.what());
  }
  if (refused_key != nullptr) refused_key->clear();
  current = std::move(next);
  return Status::Ok();
}

}  // namespace mlos
