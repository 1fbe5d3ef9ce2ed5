/* SPDX-License-Identifier: Apache-2.0 */
// The C API's text getters (mlos_training_get_notes, _get_gpus: buf, len,
// *needed) as (rc, str) for Python: the size asked first, then the text.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "mlos/errors.h"
#include "mlos/training.h"

namespace mlos_python {

using TextGetter = int (*)(const mlos_training_resources_t*, char*, size_t, size_t*);

inline std::pair<int, std::string> text_out(TextGetter get, uintptr_t h) {
  const auto* res = reinterpret_cast<const mlos_training_resources_t*>(h);
  size_t needed = 0;
  char probe[1];
  int rc = get(res, probe, sizeof probe, &needed);
  if (rc != MLOS_OK && rc != MLOS_ERR_BUFFER_TOO_SMALL) return {rc, {}};
  std::string text(needed, '\0');
  rc = get(res, text.data(), text.size(), &needed);
  if (rc != MLOS_OK) return {rc, {}};
  text.resize(strnlen(text.c_str(), text.size()));
  return {rc, text};
}

}  // namespace mlos_python
