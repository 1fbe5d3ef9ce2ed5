/* SPDX-License-Identifier: Apache-2.0 */
// Reading mlOS's environment variables: only those in the table
// (core/environment.h), so that none is read without being listed, and so
// documented (`mlos env`, docs/environment.md).
#pragma once

#include <string_view>

namespace mlos::os {

// getenv(name) (nullptr when unset) for a variable in the table. A name
// that is not in the table is a programming error: it prints
// "mlos: environment variable NAME is read but not in the table ..." on
// stderr and calls std::abort(), so that any test reaching the read fails
// (tests catch it with EXPECT_DEATH). A binary search of the table: cheap,
// and no allocation.
const char* env(std::string_view name);

// For the readers that take a getenv-like callback (core's
// thresholds_from_env, collectives' group_config_from, engine's
// decide_rank_split) and read other programs' variables too (RANK,
// MASTER_ADDR, LOCAL_WORLD_SIZE): a name with the MLOS_ prefix goes
// through env() (so it must be in the table, or the process aborts), any
// other straight to getenv.
const char* env_or_foreign(const char* name);

}  // namespace mlos::os
