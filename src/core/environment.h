/* SPDX-License-Identifier: Apache-2.0 */
// Every MLOS_* environment variable mlOS reads or sets, in one table:
// libmlos, mlos, mlosd, the GPU sharing interposer and the Python package.
// The code reads them through os::env (os/environment.h), which refuses a
// name that is not here; `mlos env` prints the table, and `mlos env
// --markdown` the one in docs/environment.md (scripts/check_environment.py,
// ctest lint.environment, keeps both in step with the code).
// Pure: the table is data; nothing here reads the environment.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace mlos {

struct EnvironmentVariable {
  std::string_view name;           // MLOS_..., a NUL-terminated literal (os::env passes it to getenv)
  std::string_view value;          // what it holds and how it is parsed, e.g. "integer ms, 1..3600000"
  std::string_view default_value;  // what applies when it is unset
  std::string_view meaning;        // one line
  std::string_view set_by;         // "user", "mlos run", ...
  // "library", "mlosd", "mlos", "Python", "interposer", or "CMD": the program
  // `mlos run` starts, for its own use (mlOS itself does not read it).
  std::string_view read_by;
};

// The table, sorted by name, names unique.
std::span<const EnvironmentVariable> environment_variables();

// The entry named `name`, nullptr when there is none.
const EnvironmentVariable* find_environment_variable(std::string_view name);

// The table for a terminal: one block per variable. And as the Markdown
// table docs/environment.md holds between its "generated" markers ('|' in a
// field escaped).
std::string environment_text();
std::string environment_markdown();

}  // namespace mlos
