// SPDX-License-Identifier: Apache-2.0
// State files that prove they are whole: round trip, and every way a file
// can be untrustworthy is reported and leaves the file as it was.
#include "os/checked_json_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "integration/proc_observer.h"

using mlos::os::CheckedJsonFile;
using mlos_test::read_text;

namespace {

class CheckedJsonFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mlos-state-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void overwrite(const std::string& text) { std::ofstream(file.path()) << text; }
  int corrupt_code() {
    auto r = file.load();
    return r.ok() ? 0 : r.error().code;
  }

  std::string dir;
  CheckedJsonFile file{"", "", "", 0};
};

TEST_F(CheckedJsonFileTest, RoundTripAndMissingFile) {
  file = CheckedJsonFile(dir, "registry.json", "mlosd-registry", 1);
  auto none = file.load();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  nlohmann::json payload{{"jobs", {{{"id", 7}, {"cpus", "0-3"}}}}};
  ASSERT_TRUE(file.save(payload).ok());
  auto back = file.load();
  ASSERT_TRUE(back.ok()) << back.error().describe();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, payload);
  // Nothing but the file itself is left in the directory.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
}

TEST_F(CheckedJsonFileTest, EveryKindOfDamageIsReportedAndNothingChanges) {
  file = CheckedJsonFile(dir, "registry.json", "mlosd-registry", 2);
  ASSERT_TRUE(file.save(nlohmann::json{{"jobs", {{{"id", 7}}}}}).ok());
  const std::string good = read_text(file.path());

  std::string flipped = good;
  flipped.replace(flipped.find("\"id\": 7"), 7, "\"id\": 8");
  const std::string cases[] = {
      flipped,                                      // payload edited: checksum fails
      good.substr(0, good.size() / 2),              // torn
      "[]",                                         // valid JSON, not a document
      std::string(good).replace(good.find("mlosd-registry"), 14, "something-else"),  // other format
      std::string(good).replace(good.find("\"schema_version\": 2"), 19, "\"schema_version\": 3"),
  };
  const char* expect[] = {"fails its checksum", "not valid JSON", "not a JSON object", "is not a mlosd-registry",
                          "schema_version 3"};
  for (size_t i = 0; i < std::size(cases); ++i) {
    overwrite(cases[i]);
    auto r = file.load();
    ASSERT_FALSE(r.ok()) << i;
    EXPECT_EQ(r.error().code, MLOS_ERR_STATE_CORRUPT) << i;
    EXPECT_NE(r.error().message.find(expect[i]), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(file.path()), std::string::npos);
    EXPECT_EQ(read_text(file.path()), cases[i]) << "left untouched";
  }
}
}  // namespace
