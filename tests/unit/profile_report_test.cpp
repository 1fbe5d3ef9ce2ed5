// SPDX-License-Identifier: Apache-2.0
// The human phase profile: seconds, shares of the job's life, entries, and
// the communication line only when there were collectives.
#include "core/profile_report.h"

#include <gtest/gtest.h>

namespace mlos {
namespace {

TEST(ProfileReport, SharesAreOfTheSumOfThePhases) {
  ProfileFigures f;
  f.claim_id = 7;
  f.num_cpus = 4;
  f.phase_ns[MLOS_TRAINING_PHASE_DATA_LOADING] = 6'000'000'000;
  f.phase_ns[MLOS_TRAINING_PHASE_FORWARD] = 3'000'000'000;
  f.phase_ns[MLOS_TRAINING_PHASE_BACKWARD] = 1'000'000'000;
  f.entries[MLOS_TRAINING_PHASE_DATA_LOADING] = 100;
  const std::string text = format_profile(f);
  EXPECT_NE(text.find("mlos profile: claim 7, 4 CPUs, 10.00 s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  DATA_LOADING          6.00   60.0%      100\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  BACKWARD              1.00   10.0%        0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("communication"), std::string::npos);  // no collectives, no line
  EXPECT_EQ(text.find("tuning"), std::string::npos);         // no mlos run choice, no line
}

TEST(ProfileReport, MlosRunsTuningChoiceIsTheLastLine) {
  ProfileFigures f;
  f.tuning = "tcmalloc";
  f.tuning_reason = std::string(300, 'r');  // longer than a formatted line's buffer
  const std::string text = format_profile(f);
  EXPECT_NE(text.find("  tuning: tcmalloc (" + std::string(300, 'r') + ")\n"), std::string::npos) << text;
}

TEST(ProfileReport, CommunicationIsShownApartWithCallsAndBytes) {
  ProfileFigures f;
  f.num_cpus = 1;
  f.phase_ns[MLOS_TRAINING_PHASE_BACKWARD] = 2'000'000'000;
  f.communication_ns = 500'000'000;
  f.collective_calls = 30;
  f.collective_bytes = 3 << 20;
  const std::string text = format_profile(f);
  EXPECT_NE(text.find("1 CPU, 2.00 s"), std::string::npos) << text;
  EXPECT_NE(text.find("  (communication)       0.50   25.0%       30 calls, 3.0 MiB\n"), std::string::npos) << text;
}

TEST(ProfileReport, AnEmptyProfileHasNoDivisionByZero) {
  const std::string text = format_profile(ProfileFigures{});
  EXPECT_NE(text.find("  IDLE                  0.00    0.0%        0\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace mlos
