// SPDX-License-Identifier: Apache-2.0
// A job's read log (engine/read_log.h) and how it travels to a policy host
// (policy_protocol.h): each policy gets each read once, a policy that fell
// behind is told how many it lost, the plan's position follows the reads,
// plan sizes come from stat, and the wire format refuses what a well-behaved
// engine never sends.
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/read_log.h"
#include "policy/policy_protocol.h"

namespace mlos {
namespace {

using nlohmann::json;
using policy::FileRead;
using policy::JobReads;

TEST(ReadLogTest, EachPolicyTakesEveryReadOnceInOrder) {
  ReadLog log;
  log.record(FileRead{"/d/a", 0, 10});
  log.record(FileRead{"/d/b", 5, 0});
  JobReads first = log.take("prefetch", 7, {100, policy::kMaxReadPathBytes});
  EXPECT_EQ(first.job, 7u);
  ASSERT_EQ(first.reads.size(), 2u);
  EXPECT_EQ(first.reads[1], (FileRead{"/d/b", 5, 0}));
  EXPECT_TRUE(log.take("prefetch", 7, {100, policy::kMaxReadPathBytes}).reads.empty()) << "taken already";
  EXPECT_EQ(log.take("other", 7, {100, policy::kMaxReadPathBytes}).reads.size(), 2u) << "another policy has its own cursor";
  log.record(FileRead{"/d/c", 0, 1});
  EXPECT_EQ(log.take("prefetch", 7, {0, policy::kMaxReadPathBytes}).reads.size(), 0u) << "max 0 takes nothing";
  EXPECT_EQ(log.take("prefetch", 7, {100, policy::kMaxReadPathBytes}).reads.size(), 1u);
  EXPECT_EQ(log.recorded(), 3u);
  for (int i = 0; i < 10; ++i) log.record(FileRead{"/d/1234", 0, 1});  // 7 bytes each
  EXPECT_EQ(log.take("prefetch", 7, {100, 30}).reads.size(), 2u) << "half of 30 path bytes: two paths of 7";
  EXPECT_EQ(log.take("prefetch", 7).reads.size(), 8u) << "the rest, next time";
}

TEST(ReadLogTest, APolicyThatFellBehindTheBoundIsToldWhatItLost) {
  ReadLog log;
  (void)log.take("slow", 1, {0, 0});  // registers at the start
  for (size_t i = 0; i < ReadLog::kCapacity + 100; ++i) log.record(FileRead{"/d/x", i, 1});
  JobReads r = log.take("slow", 1);
  EXPECT_EQ(r.lost, 100u);
  ASSERT_EQ(r.reads.size(), policy::kMaxReadsPerEvent) << "the protocol's bound";
  EXPECT_EQ(r.reads[0].offset, 100u) << "the oldest kept";
}

TEST(ReadLogTest, ThePlanPositionFollowsReadsAndSizesComeFromStat) {
  char dir[] = "/tmp/mlos-readlog-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string a = std::string(dir) + "/a", b = std::string(dir) + "/b", c = std::string(dir) + "/c";
  std::ofstream(a) << std::string(100, 'x');
  std::ofstream(b) << std::string(2000, 'y');
  ReadLog log;
  log.announce({a, b, c});
  JobReads r = log.take("p", 1);
  EXPECT_EQ(r.plan.generation, 1u);
  EXPECT_EQ(r.plan.position, 0u);
  EXPECT_EQ(r.plan.total, 3u);
  EXPECT_EQ(r.plan.sizes, (std::vector<int64_t>{100, 2000, -1})) << "c does not exist";
  log.record(FileRead{"/elsewhere", 0, 0});
  r = log.take("p", 1);
  EXPECT_EQ(r.plan.position, 0u) << "a file not in the plan";
  ASSERT_EQ(r.reads.size(), 1u);
  EXPECT_EQ(r.reads[0].length, 0u) << "a file that is not there keeps length 0";
  log.record(FileRead{b, 0, 0});
  r = log.take("p", 1);
  EXPECT_EQ(r.plan.position, 2u) << "past b (a was skipped)";
  EXPECT_EQ(r.plan.paths, (std::vector<std::string>{c}));
  log.record(FileRead{a, 0, 0});
  log.record(FileRead{a, 40, 0});
  r = log.take("p", 1);
  ASSERT_EQ(r.reads.size(), 2u);
  EXPECT_EQ(r.reads[0].length, 100u) << "a whole-file read gets the file's size";
  EXPECT_EQ(r.reads[1].length, 60u) << "from its offset";
  log.announce({});
  r = log.take("p", 1);
  EXPECT_EQ(r.plan.generation, 2u);
  EXPECT_EQ(r.plan.total, 0u);
  unlink(a.c_str());
  unlink(b.c_str());
  rmdir(dir);
}

TEST(ReadLogWireTest, PathsAreCountedAsJsonWritesThem) {
  EXPECT_EQ(policy::json_string_bytes("/d/a"), 4u);
  EXPECT_EQ(policy::json_string_bytes("/d/\"q\\"), 8u);
  EXPECT_EQ(policy::json_string_bytes(std::string("/d/\x01")), 9u);
  EXPECT_EQ(policy::json_string_bytes(std::string("/d/") + "\xc3\xa9"), 5u) << "UTF-8 goes as is";
}

TEST(ReadLogWireTest, RoundTripsWithFilesNamedOnce) {
  JobReads r;
  r.job = 3;
  r.reads = {{"/d/a", 0, 10}, {"/d/b", 4096, 0}, {"/d/a", 10, 10}};
  r.lost = 2;
  r.plan = {5, 1, 4, {"/d/c", "/d/d"}, {100, -1}};
  const json j = policy::job_reads_to_json(r);
  EXPECT_EQ(j["files"].size(), 2u);
  auto back = policy::job_reads_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(ReadLogWireTest, RefusesWhatAWellBehavedEngineNeverSends) {
  JobReads r;
  r.job = 1;
  r.reads = {{"/d/a", 0, 1}};
  r.plan = {1, 0, 1, {"/d/c"}, {1}};
  const json good = policy::job_reads_to_json(r);
  auto refused = [](json j) { return policy::job_reads_from_json(j).error().code == MLOS_ERR_INVALID_ARGUMENT; };
  json j = good;
  j["files"][0] = "relative";
  EXPECT_TRUE(refused(j));
  j = good;
  j["reads"][0][0] = 5;
  EXPECT_TRUE(refused(j)) << "file index out of range";
  j = good;
  j["reads"][0][1] = -1;
  EXPECT_TRUE(refused(j));
  j = good;
  j["plan"]["sizes"] = json::array({-2});
  EXPECT_TRUE(refused(j));
  j = good;
  j["plan"]["position"] = 1;
  EXPECT_TRUE(refused(j)) << "a window past the plan's end";
  j = good;
  j["reads"] = json::array();
  for (size_t i = 0; i <= policy::kMaxReadsPerEvent; ++i) j["reads"].push_back(json::array({0, i, 1}));
  EXPECT_TRUE(refused(j));
  j = good;
  j.erase("plan");
  EXPECT_TRUE(refused(j));
}

TEST(ReadLogWireTest, FileAdviceCarriesARangeAndOtherActionsRefuseOne) {
  policy::Action a{1, policy::ActionKind::kFileAdvice, MLOS_POLICY_FILE_WILLNEED, "/d/a", 4096, 8192};
  auto back = policy::action_from_json(policy::action_to_json(a));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  json j = policy::action_to_json(policy::Action{1, policy::ActionKind::kThreads, 2});
  j["offset"] = 0;
  j["length"] = 1;
  EXPECT_EQ(policy::action_from_json(j).error().code, MLOS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace mlos
