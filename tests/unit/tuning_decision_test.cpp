// SPDX-License-Identifier: Apache-2.0
// mlos run's choice between start-up settings across runs of one command
// (src/tune/tuning_decision.h).
#include "tune/tuning_decision.h"

#include <gtest/gtest.h>

namespace mlos::tune {
namespace {

const std::vector<std::string> kOrder = {"tcmalloc", "glibc", "jemalloc"};

TEST(TuningDecision, AFirstRunGetsTheDefault) {
  const Decision d = decide(kOrder, kOrder, {});
  EXPECT_EQ(d.candidate, "tcmalloc");
  EXPECT_FALSE(d.exploring);
  EXPECT_NE(d.reason.find("default"), std::string::npos);
}

TEST(TuningDecision, AMissingDefaultFallsToTheNextAvailable) {
  EXPECT_EQ(decide(kOrder, {"glibc", "jemalloc"}, {}).candidate, "glibc");
}

TEST(TuningDecision, ACommandThatNeverReportsStepsStaysOnTheDefault) {
  std::map<std::string, CandidateRecord> r{{"tcmalloc", {3, {}}}};
  const Decision d = decide(kOrder, kOrder, r);
  EXPECT_EQ(d.candidate, "tcmalloc");
  EXPECT_NE(d.reason.find("no training steps"), std::string::npos);
}

TEST(TuningDecision, OnceTheDefaultIsMeasuredEachOtherCandidateIsTriedOnce) {
  std::map<std::string, CandidateRecord> r{{"tcmalloc", {1, {10.0}}}};
  Decision d = decide(kOrder, kOrder, r);
  EXPECT_EQ(d.candidate, "glibc");
  EXPECT_TRUE(d.exploring);
  EXPECT_NE(d.reason.find("tcmalloc 10 ms/step"), std::string::npos) << d.reason;
  r["glibc"] = {1, {12.0}};
  d = decide(kOrder, kOrder, r);
  EXPECT_EQ(d.candidate, "jemalloc");
  EXPECT_TRUE(d.exploring);
}

TEST(TuningDecision, AnUnavailableCandidateIsNeverTried) {
  std::map<std::string, CandidateRecord> r{{"tcmalloc", {1, {10.0}}}, {"glibc", {1, {12.0}}}};
  const Decision d = decide(kOrder, {"tcmalloc", "glibc"}, r);
  EXPECT_EQ(d.candidate, "tcmalloc");
  EXPECT_FALSE(d.exploring);
}

TEST(TuningDecision, AfterTheTrialsTheLowestRecentMedianWins) {
  std::map<std::string, CandidateRecord> r{
      {"tcmalloc", {3, {10.0, 11.0, 10.5}}}, {"glibc", {1, {9.0}}}, {"jemalloc", {1, {20.0}}}};
  Decision d = decide(kOrder, kOrder, r);
  EXPECT_EQ(d.candidate, "glibc");
  EXPECT_FALSE(d.exploring);
  EXPECT_NE(d.reason.find("glibc 9 ms/step (1 run)"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("jemalloc 20 ms/step"), std::string::npos) << d.reason;
  // glibc's own runs then decide: if they turn out slower, tcmalloc is back.
  r["glibc"] = {4, {9.0, 12.0, 12.5, 13.0}};
  EXPECT_EQ(decide(kOrder, kOrder, r).candidate, "tcmalloc");
}

TEST(TuningDecision, TheDefaultStaysUnlessAnotherIsClearlyFaster) {
  // 4 % faster in one trial: within a shared machine's run-to-run spread.
  std::map<std::string, CandidateRecord> r{
      {"tcmalloc", {2, {10.0, 10.0}}}, {"glibc", {1, {9.6}}}, {"jemalloc", {1, {20.0}}}};
  Decision d = decide(kOrder, kOrder, r);
  EXPECT_EQ(d.candidate, "tcmalloc");
  EXPECT_NE(d.reason.find("kept"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("glibc 9.6 ms/step"), std::string::npos) << d.reason;
  r["glibc"] = {1, {9.4}};  // 6 % faster
  EXPECT_EQ(decide(kOrder, kOrder, r).candidate, "glibc");
}

TEST(TuningDecision, ACandidateWhoseRunsNeverReportedIsNotRetried) {
  std::map<std::string, CandidateRecord> r{{"tcmalloc", {2, {10.0, 10.0}}}, {"glibc", {1, {}}}, {"jemalloc", {1, {30.0}}}};
  const Decision d = decide(kOrder, kOrder, r);
  EXPECT_EQ(d.candidate, "tcmalloc");
  EXPECT_NE(d.reason.find("glibc never measured"), std::string::npos) << d.reason;
}

TEST(TuningDecision, NothingAvailableIsSaid) {
  EXPECT_EQ(decide(kOrder, {}, {}).candidate, "");
}

TEST(TuningDecision, TheMedianCountsOnlyTheLastWindow) {
  EXPECT_EQ(recent_median({}), 0);
  EXPECT_EQ(recent_median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(recent_median({1.0, 3.0}), 2.0);
  // The two old 100s fall out of the window of 5.
  EXPECT_EQ(recent_median({100.0, 100.0, 1.0, 2.0, 3.0, 4.0, 5.0}), 3.0);
}

}  // namespace
}  // namespace mlos::tune
