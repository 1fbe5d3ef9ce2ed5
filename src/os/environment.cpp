// SPDX-License-Identifier: Apache-2.0
#include "os/environment.h"

#include <cstdio>
#include <cstdlib>

#include "core/environment.h"

namespace mlos::os {

const char* env(std::string_view name) {
  const EnvironmentVariable* v = find_environment_variable(name);
  if (v == nullptr) {
    std::fprintf(stderr,
                 "mlos: environment variable %.*s is read but not in the table of environment variables "
                 "(src/core/environment.cpp)\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  // The table's names are literals, so NUL-terminated; `name` need not be.
  return std::getenv(v->name.data());
}

const char* env_or_foreign(const char* name) {
  return std::string_view(name).starts_with("MLOS_") ? env(name) : std::getenv(name);
}

}  // namespace mlos::os
