// SPDX-License-Identifier: Apache-2.0
// The table of environment variables (core/environment.h) and reading
// through it (os/environment.h): the table's own rules, and every MLOS_
// name that a reader taking a getenv-like callback asks for is in it.
#include "core/environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "collectives/group_config.h"
#include "core/memory_pressure.h"
#include "core/topology.h"
#include "engine/embedded_policy_config.h"
#include "engine/rank_bound.h"
#include "os/environment.h"

namespace mlos {
namespace {

TEST(Environment, NamesAreUniqueSortedAndMlosOnesWithEveryFieldFilled) {
  const auto table = environment_variables();
  ASSERT_GE(table.size(), 40u);
  std::set<std::string_view> seen;
  std::string_view last;
  for (const auto& v : table) {
    EXPECT_TRUE(v.name.starts_with("MLOS_")) << v.name;
    EXPECT_TRUE(seen.insert(v.name).second) << v.name << " twice";
    EXPECT_LT(last, v.name) << "not sorted at " << v.name;
    last = v.name;
    // os::env hands the name to getenv: it must end where the literal does.
    EXPECT_EQ(v.name.data()[v.name.size()], '\0') << v.name;
    for (std::string_view field : {v.value, v.default_value, v.meaning, v.set_by, v.read_by}) {
      EXPECT_FALSE(field.empty()) << v.name;
      EXPECT_EQ(field.find('\n'), std::string_view::npos) << v.name << ": one line each";
    }
  }
}

TEST(Environment, FindNamesOnlyWholeNamesOfTheTable) {
  for (const auto& v : environment_variables()) EXPECT_EQ(find_environment_variable(v.name), &v) << v.name;
  const EnvironmentVariable* store = find_environment_variable("MLOS_STORE");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->name, "MLOS_STORE");
  EXPECT_EQ(find_environment_variable("MLOS_STOR"), nullptr);
  EXPECT_EQ(find_environment_variable("MLOS_STORE_"), nullptr);
  EXPECT_EQ(find_environment_variable("MLOS_NOT_A_VARIABLE"), nullptr);
  EXPECT_EQ(find_environment_variable("PATH"), nullptr);
  EXPECT_EQ(find_environment_variable(""), nullptr);
}

TEST(Environment, TheMarkdownTableHasOneRowPerVariableWithBarsAndAnglesEscaped) {
  const std::string md = environment_markdown();
  size_t rows = 0;
  for (size_t at = 0; (at = md.find('\n', at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, environment_variables().size() + 2);  // header and its rule
  EXPECT_NE(md.find("| `MLOS_STORE` | file:/DIR \\| redis://HOST[:PORT] \\| tcp://HOST:PORT |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("synthetic:&lt;hwloc description&gt; \\| xml:&lt;file&gt;"), std::string::npos) << md;
  const std::string text = environment_text();
  for (const auto& v : environment_variables()) EXPECT_NE(text.find(std::string(v.name) + "\n"), std::string::npos);
}

TEST(Environment, EnvReadsAVariableOfTheTable) {
  setenv("MLOS_GROUP", "run7", 1);
  EXPECT_STREQ(os::env("MLOS_GROUP"), "run7");
  EXPECT_EQ(os::env("MLOS_GROUP"), getenv("MLOS_GROUP"));
  // A name that is not NUL-terminated where the view ends.
  EXPECT_STREQ(os::env(std::string_view("MLOS_GROUPX", 10)), "run7");
  unsetenv("MLOS_GROUP");
  EXPECT_EQ(os::env("MLOS_GROUP"), nullptr);
  // Another program's variable, through the callbacks' reader.
  EXPECT_EQ(os::env_or_foreign("HOME"), getenv("HOME"));
}

TEST(EnvironmentDeathTest, ReadingANameOutsideTheTableAborts) {
  EXPECT_DEATH(os::env("MLOS_NOT_A_VARIABLE"), "environment variable MLOS_NOT_A_VARIABLE is read but not in the table");
  EXPECT_DEATH(os::env("HOME"), "HOME is read but not in the table");
  EXPECT_DEATH(os::env_or_foreign("MLOS_NOT_A_VARIABLE"), "MLOS_NOT_A_VARIABLE is read but not in the table");
}

// A getenv-like callback that answers from `vars` and notes every name asked for.
struct RecordingEnv {
  std::map<std::string, std::string> vars;
  std::set<std::string> asked;
  std::function<const char*(const char*)> lookup() {
    return [this](const char* n) -> const char* {
      asked.insert(n);
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
  void expect_mlos_names_in_table() const {
    size_t mlos = 0;
    for (const auto& n : asked) {
      if (!n.starts_with("MLOS_")) continue;
      ++mlos;
      EXPECT_NE(find_environment_variable(n), nullptr) << n << " is read but not in the table";
    }
    EXPECT_GT(mlos, 0u);
  }
};

TEST(Environment, TheMemoryThresholdVariablesAreInTheTable) {
  RecordingEnv e;
  ASSERT_TRUE(thresholds_from_env(MemoryThresholds{}, e.lookup()).ok());
  EXPECT_EQ(e.asked.size(), 6u);
  e.expect_mlos_names_in_table();
}

TEST(Environment, TheCollectiveGroupVariablesAreInTheTable) {
  // A TCP store read from MLOS_STORE: every later variable is asked for.
  RecordingEnv tcp{{{"MLOS_STORE", "tcp://127.0.0.1:29500"}}};
  ASSERT_TRUE(collectives::group_config_from(0, 1, tcp.lookup()).ok());
  for (const char* n : {"MLOS_STORE", "MLOS_STORE_SECRET", "MLOS_COLLECTIVE_TIMEOUT_MS", "MLOS_GROUP",
                        "MLOS_COLLECTIVE_HOST", "MLOS_COLLECTIVE_IFACE"}) {
    EXPECT_TRUE(tcp.asked.contains(n)) << n;
  }
  tcp.expect_mlos_names_in_table();
  RecordingEnv from_launcher{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                              {"MASTER_PORT", "29500"}}};
  ASSERT_TRUE(collectives::group_config_from(-1, -1, from_launcher.lookup()).ok());
  from_launcher.expect_mlos_names_in_table();
}

TEST(Environment, TheRankSplitVariablesAreInTheTable) {
  RecordingEnv e{{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}};
  ASSERT_TRUE(decide_rank_split(make_uniform_topology(1, 4, 1), CpuSet::range(0, 3), e.lookup()).ok());
  EXPECT_TRUE(e.asked.contains("MLOS_RANK_SPLIT"));
  e.expect_mlos_names_in_table();
}

// The embedded engine's policy settings read through os::env: a name
// outside the table would abort here.
TEST(Environment, TheEmbeddedPolicyVariablesAreInTheTable) {
  setenv("MLOS_DEFAULT_POLICIES", "a, b", 1);
  EXPECT_EQ(embedded_default_policies(), (std::vector<std::string>{"a", "b"}));
  unsetenv("MLOS_DEFAULT_POLICIES");
  (void)embedded_policy_config();  // UNSUPPORTED without a policy host: fine
  for (const char* n : {"MLOS_POLICY_DIR", "MLOS_POLICY_HOST", "MLOS_DEFAULT_POLICIES", "MLOS_JOB_POLICIES",
                        "MLOS_DATALOAD_HELPER", "MLOS_GPUSHARE_LIBRARY"}) {
    EXPECT_NE(find_environment_variable(n), nullptr) << n;
  }
}

}  // namespace
}  // namespace mlos
