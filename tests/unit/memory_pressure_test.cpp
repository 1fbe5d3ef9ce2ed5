// SPDX-License-Identifier: Apache-2.0
// Levels from figures: entry at once, exit only after the hysteresis margin
// held for hold_ms; kernel events; thresholds from the environment.
#include "core/memory_pressure.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace mlos {
namespace {

constexpr uint64_t kMs = 1000000;

MemoryFigures headroom(double fraction) {
  MemoryFigures f;
  f.consider(static_cast<uint64_t>(fraction * 1000), 1000, MemorySource::kCgroup);
  return f;
}

TEST(MemoryPressureTracker, RisesAtOnceThroughBothLevels) {
  PressureLevelTracker t{MemoryThresholds{}};
  EXPECT_EQ(t.update(headroom(0.5), 0), MLOS_MEMORY_PRESSURE_NORMAL);
  EXPECT_EQ(t.update(headroom(0.20), 1), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.08), 2), MLOS_MEMORY_PRESSURE_CRITICAL);
  // Straight from NORMAL to CRITICAL too.
  PressureLevelTracker u{MemoryThresholds{}};
  EXPECT_EQ(u.update(headroom(0.01), 0), MLOS_MEMORY_PRESSURE_CRITICAL);
}

TEST(MemoryPressureTracker, FallsOnlyPastTheHysteresisAfterHoldMs) {
  MemoryThresholds th;  // moderate 20 %, hysteresis 5 %, hold 1000 ms
  PressureLevelTracker t{th};
  ASSERT_EQ(t.update(headroom(0.15), 0), MLOS_MEMORY_PRESSURE_MODERATE);
  // Above the entry threshold but inside the hysteresis: stays, however long.
  EXPECT_EQ(t.update(headroom(0.23), 10 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.23), 5000 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  // Clear of it: only after hold_ms of continuous clearance.
  EXPECT_EQ(t.update(headroom(0.30), 6000 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.30), 6999 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.30), 7000 * kMs), MLOS_MEMORY_PRESSURE_NORMAL);
}

TEST(MemoryPressureTracker, AFlapBackRestartsTheHoldClock) {
  PressureLevelTracker t{MemoryThresholds{}};
  ASSERT_EQ(t.update(headroom(0.15), 0), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.40), 100 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.22), 900 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);  // inside the margin
  EXPECT_EQ(t.update(headroom(0.40), 1200 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.40), 2100 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
  EXPECT_EQ(t.update(headroom(0.40), 2200 * kMs), MLOS_MEMORY_PRESSURE_NORMAL);
}

TEST(MemoryPressureTracker, CriticalStepsDownThroughModerate) {
  PressureLevelTracker t{MemoryThresholds{}};
  ASSERT_EQ(t.update(headroom(0.05), 0), MLOS_MEMORY_PRESSURE_CRITICAL);
  // 18 % headroom clears CRITICAL's exit (8 + 5) but not MODERATE's entry.
  EXPECT_EQ(t.update(headroom(0.18), 1), MLOS_MEMORY_PRESSURE_CRITICAL);
  EXPECT_EQ(t.update(headroom(0.18), 1 + 1000 * kMs), MLOS_MEMORY_PRESSURE_MODERATE);
}

TEST(MemoryPressureTracker, PsiAveragesRaiseAndHoldLevels) {
  MemoryThresholds th;  // some >= 10 -> MODERATE, full >= 5 -> CRITICAL
  PressureLevelTracker t{th};
  MemoryFigures f = headroom(0.9);
  f.psi_some_avg10 = 12;
  EXPECT_EQ(t.update(f, 0), MLOS_MEMORY_PRESSURE_MODERATE);
  f.psi_full_avg10 = 6;
  EXPECT_EQ(t.update(f, 1), MLOS_MEMORY_PRESSURE_CRITICAL);
  // Exit needs PSI below half the entry value.
  f.psi_full_avg10 = 3;
  EXPECT_EQ(t.update(f, 5000 * kMs), MLOS_MEMORY_PRESSURE_CRITICAL);
  f.psi_full_avg10 = 2;
  f.psi_some_avg10 = 4;
  EXPECT_EQ(t.update(f, 6000 * kMs), MLOS_MEMORY_PRESSURE_CRITICAL);
  EXPECT_EQ(t.update(f, 7000 * kMs), MLOS_MEMORY_PRESSURE_NORMAL);
}

TEST(MemoryPressureTracker, KernelEventsHoldTheirLevelForHoldMs) {
  PressureLevelTracker t{MemoryThresholds{}};
  t.kernel_event(MLOS_MEMORY_PRESSURE_CRITICAL, 100 * kMs);
  EXPECT_EQ(t.update(headroom(0.9), 100 * kMs), MLOS_MEMORY_PRESSURE_CRITICAL);
  EXPECT_EQ(t.update(headroom(0.9), 1099 * kMs), MLOS_MEMORY_PRESSURE_CRITICAL);
  // The event expired at 1100 ms; the exit then needs its own hold.
  EXPECT_EQ(t.update(headroom(0.9), 1100 * kMs), MLOS_MEMORY_PRESSURE_CRITICAL);
  EXPECT_EQ(t.update(headroom(0.9), 2100 * kMs), MLOS_MEMORY_PRESSURE_NORMAL);
  // NORMAL "events" (a bare wake-up) raise nothing.
  t.kernel_event(MLOS_MEMORY_PRESSURE_NORMAL, 3000 * kMs);
  EXPECT_EQ(t.update(headroom(0.9), 3000 * kMs), MLOS_MEMORY_PRESSURE_NORMAL);
}

TEST(MemoryFigures, KeepsTheTightestSource) {
  MemoryFigures f;
  EXPECT_EQ(f.headroom(), 1.0);
  f.consider(8ull << 30, 16ull << 30, MemorySource::kNode);    // 50 %
  f.consider(100, 1000, MemorySource::kCgroup);                // 10 %
  f.consider(600, 1000, MemorySource::kJob);                   // 60 %
  EXPECT_EQ(f.source, MemorySource::kCgroup);
  EXPECT_EQ(f.available_bytes, 100u);
  f.consider(5000, 1000, MemorySource::kJob);  // clamped to the budget
  EXPECT_EQ(f.source, MemorySource::kCgroup);
  f.consider(1, 0, MemorySource::kJob);  // no budget: ignored
  EXPECT_EQ(f.budget_bytes, 1000u);
}

TEST(MemoryThresholds, ValidationNamesTheProblem) {
  EXPECT_TRUE(validate(MemoryThresholds{}));
  auto bad = [](auto mutate) {
    MemoryThresholds t;
    mutate(t);
    Status s = validate(t);
    EXPECT_FALSE(s);
    return s ? std::string() : s.error().message;
  };
  EXPECT_NE(bad([](auto& t) { t.critical_headroom = 0.3; }).find("critical headroom"), std::string::npos);
  EXPECT_NE(bad([](auto& t) { t.moderate_headroom = 1.2; }).find("moderate headroom"), std::string::npos);
  EXPECT_NE(bad([](auto& t) { t.hysteresis = 0.9; }).find("hysteresis"), std::string::npos);
  EXPECT_NE(bad([](auto& t) { t.moderate_psi_some = 101; }).find("PSI"), std::string::npos);
  EXPECT_NE(bad([](auto& t) { t.sample_ms = 1; }).find("sample_ms"), std::string::npos);
  EXPECT_NE(bad([](auto& t) { t.psi_trigger_stall_ms = 3000; }).find("stall"), std::string::npos);
}

TEST(MemoryThresholds, FromTheEnvironment) {
  std::map<std::string, std::string> env{{"MLOS_MEMORY_MODERATE", "30"},
                                         {"MLOS_MEMORY_CRITICAL", "10.5"},
                                         {"MLOS_MEMORY_HOLD_MS", "250"}};
  auto get = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto t = thresholds_from_env(MemoryThresholds{}, get);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(t->moderate_headroom, 0.30);
  EXPECT_DOUBLE_EQ(t->critical_headroom, 0.105);
  EXPECT_EQ(t->hold_ms, 250u);
  EXPECT_EQ(t->sample_ms, MemoryThresholds{}.sample_ms);

  for (auto [k, v] : {std::pair{"MLOS_MEMORY_MODERATE", "lots"}, std::pair{"MLOS_MEMORY_HOLD_MS", "1.5"},
                      std::pair{"MLOS_MEMORY_CRITICAL", "50"}, std::pair{"MLOS_MEMORY_PSI_SOME", "-1"}}) {
    env = {{k, v}};
    auto r = thresholds_from_env(MemoryThresholds{}, get);
    ASSERT_FALSE(r) << k << "=" << v;
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
    if (std::string(k) != "MLOS_MEMORY_CRITICAL") {
      EXPECT_NE(r.error().message.find(k), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace mlos
