// SPDX-License-Identifier: Apache-2.0
// mlos env: the table of environment variables (core/environment.h).
#include <iostream>

#include "cli_output.h"
#include "commands.h"
#include "core/environment.h"

namespace mlos::cli {

int run_env(const EnvOptions& options) {
  std::cout << (options.markdown ? environment_markdown() : environment_text());
  return kExitOk;
}

}  // namespace mlos::cli
