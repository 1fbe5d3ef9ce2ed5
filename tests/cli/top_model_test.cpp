// SPDX-License-Identifier: Apache-2.0
// mlos top's interactive view without a terminal: meters, rows, sorting,
// filtering, phase bars (tools/mlos/top_model.h).
#include "top_model.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mlos::cli {
namespace {

using nlohmann::json;

json job(uint64_t id, const std::string& label, const std::string& cpus, json extra = json::object()) {
  json j{{"job", id},
         {"label", label},
         {"pid", 1000 + id},
         {"cpus", cpus},
         {"phase", "FORWARD"},
         {"phase_seconds", {{"IDLE", 0}, {"DATA_LOADING", 0}, {"FORWARD", 1}, {"BACKWARD", 3},
                            {"OPTIMIZER", 0}, {"CHECKPOINT", 0}}},
         {"memory_bytes", 0},
         {"memory_used_bytes", nullptr}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

json reply(json jobs, const std::string& cpus = "0-3", const std::string& exclusive = "") {
  return json{{"daemon", {{"version", "0.1.0"}, {"pid", 1}}}, {"cpus", cpus}, {"exclusive_cpus", exclusive},
              {"shared_pool", cpus}, {"jobs", std::move(jobs)}};
}

std::vector<uint64_t> ids(const std::vector<TopJobRow>& rows) {
  std::vector<uint64_t> out;
  for (const auto& r : rows) out.push_back(r.job);
  return out;
}

TEST(CpuBusyTrackerTest, BusyShareIsTheBusySecondsOverTheTimeBetweenSamples) {
  CpuBusyTracker t;
  EXPECT_TRUE(t.update({{0, 10.0}, {1, 5.0}}, 100.0).empty());  // nothing to compare with yet
  auto busy = t.update({{0, 10.5}, {1, 5.0}, {2, 1.0}}, 101.0);
  EXPECT_DOUBLE_EQ(busy.at(0), 50.0);
  EXPECT_DOUBLE_EQ(busy.at(1), 0.0);
  EXPECT_FALSE(busy.count(2));  // new CPU: no earlier sample
  // Clock jitter cannot make a CPU more than fully busy; counters that went
  // back (a CPU that went offline and came back) give no value.
  busy = t.update({{0, 12.0}, {1, 4.0}}, 102.0);
  EXPECT_DOUBLE_EQ(busy.at(0), 100.0);
  EXPECT_FALSE(busy.count(1));
}

TEST(TopModelTest, RowsCarryTheJobsFiguresAndStableLetters) {
  TopModel m;
  m.update(reply({job(7, "beta", "2-3", {{"memory_bytes", 1 << 30}, {"memory_used_bytes", 1 << 20},
                                         {"memory_pressure", {{"level", 1}}}}),
                  job(3, "alpha", "0")}),
           {{7, 150.0}}, {});
  auto rows = m.rows();
  ASSERT_EQ(rows.size(), 2u);
  // Default sort: CPU% descending, jobs without a rate after.
  EXPECT_EQ(ids(rows), (std::vector<uint64_t>{7, 3}));
  const TopJobRow& beta = rows[0];
  EXPECT_EQ(beta.label, "beta");
  EXPECT_EQ(beta.pid, "1007");
  EXPECT_EQ(beta.cpus, CpuSet::range(2, 3));
  ASSERT_TRUE(beta.cpu_percent);
  EXPECT_DOUBLE_EQ(*beta.cpu_percent, 150.0);
  EXPECT_EQ(beta.memory_used, 1u << 20);
  EXPECT_EQ(beta.memory_limit, 1u << 30);
  EXPECT_EQ(beta.pressure, 1);
  ASSERT_TRUE(beta.phase_share);
  EXPECT_DOUBLE_EQ((*beta.phase_share)[2], 0.25);  // FORWARD
  EXPECT_DOUBLE_EQ((*beta.phase_share)[3], 0.75);  // BACKWARD
  // Letters follow job ids (3 -> A, 7 -> B), whatever the sort.
  EXPECT_EQ(rows[1].mark, 'A');
  EXPECT_EQ(beta.mark, 'B');
  EXPECT_EQ(rows[1].pressure, -1);  // no memory watch
  EXPECT_FALSE(rows[1].cpu_percent);
}

TEST(TopModelTest, SortColumnsCycleBothWaysAndOrderTheRows) {
  TopModel m;
  m.update(reply({job(1, "zeta", "0", {{"memory_used_bytes", 100}, {"phase", "BACKWARD"}}),
                  job(2, "Alpha", "1", {{"memory_used_bytes", 300}, {"phase", "IDLE"},
                                        {"memory_pressure", {{"level", 2}}}}),
                  job(3, "mid", "2", {{"phase", "-"}})}),
           {{1, 10.0}, {2, 5.0}, {3, 20.0}}, {});
  EXPECT_EQ(m.sort(), SortColumn::kCpuPercent);
  EXPECT_EQ(ids(m.rows()), (std::vector<uint64_t>{3, 1, 2}));
  m.cycle_sort(1);
  EXPECT_EQ(m.sort(), SortColumn::kMemory);  // largest first, unknown last
  EXPECT_EQ(ids(m.rows()), (std::vector<uint64_t>{2, 1, 3}));
  m.cycle_sort(1);
  EXPECT_EQ(m.sort(), SortColumn::kJob);
  EXPECT_EQ(ids(m.rows()), (std::vector<uint64_t>{1, 2, 3}));
  m.cycle_sort(1);
  EXPECT_EQ(m.sort(), SortColumn::kLabel);  // case-insensitive
  EXPECT_EQ(ids(m.rows()), (std::vector<uint64_t>{2, 3, 1}));
  m.cycle_sort(1);
  EXPECT_EQ(m.sort(), SortColumn::kPhase);  // "-" last
  EXPECT_EQ(ids(m.rows()), (std::vector<uint64_t>{1, 2, 3}));
  m.cycle_sort(1);
  EXPECT_EQ(m.sort(), SortColumn::kPressure);
  EXPECT_EQ(ids(m.rows()).front(), 2u);
  m.cycle_sort(1);
  EXPECT_EQ(m.sort(), SortColumn::kCpuPercent);  // wrapped around
  m.cycle_sort(-1);
  EXPECT_EQ(m.sort(), SortColumn::kPressure);
  EXPECT_STREQ(sort_column_title(m.sort()), "PRESSURE");
}

TEST(TopModelTest, FilterMatchesLabelSubstringsIgnoringCase) {
  TopModel m;
  m.update(reply({job(1, "train-resnet", "0"), job(2, "eval", "1"), job(3, "Train-bert", "2")}), {}, {});
  m.set_filter("train");
  EXPECT_EQ(ids(m.rows()), (std::vector<uint64_t>{1, 3}));
  m.set_filter("no-such-job");
  EXPECT_TRUE(m.rows().empty());
  EXPECT_EQ(m.total_jobs(), 3u);
  m.set_filter("");
  EXPECT_EQ(m.rows().size(), 3u);
}

TEST(TopModelTest, MetersMarkEachCpuWithTheJobsShownOnIt) {
  TopModel m;
  m.update(reply({job(1, "a", "0-1"), job(2, "b", "1"), job(3, "c", "3")}, "0-3", "3"),
           {}, {{0, 12.5}, {3, 100.0}});
  auto meters = m.meters();
  ASSERT_EQ(meters.size(), 4u);
  EXPECT_EQ(meters[0].cpu, 0);
  EXPECT_EQ(meters[0].mark, 'A');
  EXPECT_EQ(meters[0].colour, 0);
  ASSERT_TRUE(meters[0].busy);
  EXPECT_DOUBLE_EQ(*meters[0].busy, 12.5);
  EXPECT_EQ(meters[1].mark, '+');  // jobs 1 and 2 share it
  EXPECT_EQ(meters[1].colour, -1);
  EXPECT_FALSE(meters[1].busy);
  EXPECT_EQ(meters[2].mark, ' ');
  EXPECT_EQ(meters[3].mark, 'C');
  EXPECT_TRUE(meters[3].exclusive);
  EXPECT_FALSE(meters[0].exclusive);
  // Filtered-out jobs no longer mark their CPUs.
  m.set_filter("b");
  meters = m.meters();
  EXPECT_EQ(meters[0].mark, ' ');
  EXPECT_EQ(meters[1].mark, 'B');
}

TEST(TopModelTest, UnavailableDaemonClearsJobsAndMetersUntilTheNextReply) {
  TopModel m;
  m.update(reply({job(1, "a", "0")}), {}, {{0, 1.0}});
  m.set_unavailable("DAEMON_UNAVAILABLE: gone");
  EXPECT_EQ(m.unavailable(), "DAEMON_UNAVAILABLE: gone");
  EXPECT_TRUE(m.rows().empty());
  EXPECT_TRUE(m.meters().empty());
  m.update(reply({job(1, "a", "0")}), {}, {});
  EXPECT_EQ(m.unavailable(), "");
  EXPECT_EQ(m.rows().size(), 1u);
}

TEST(TopModelTest, MissingAndNullFieldsRenderAsUnknown) {
  TopModel m;
  m.update(json{{"jobs", json::array({json{{"job", 4}}, json("not an object")})}}, {}, {});
  auto rows = m.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label, "-");
  EXPECT_EQ(rows[0].cpus_text, "-");
  EXPECT_TRUE(rows[0].cpus.empty());
  EXPECT_FALSE(rows[0].phase_share);
  EXPECT_TRUE(m.meters().empty());  // no "cpus" in the reply
}

TEST(PhaseBarTest, SharesBecomeLettersOfExactlyTheWidth) {
  EXPECT_EQ(phase_bar(std::nullopt, 5), ".....");
  EXPECT_EQ(phase_bar(std::array<double, 6>{0, 0, 0.25, 0.75, 0, 0}, 8), "FFBBBBBB");
  // Largest remainders get the rounding: 1/3 each of 10 cells is 3+3+3,
  // plus one for the first of the equal remainders.
  const double third = 1.0 / 3;
  const std::string bar = phase_bar(std::array<double, 6>{0, third, third, third, 0, 0}, 10);
  EXPECT_EQ(bar.size(), 10u);
  EXPECT_EQ(std::count(bar.begin(), bar.end(), 'D') + std::count(bar.begin(), bar.end(), 'F') +
                std::count(bar.begin(), bar.end(), 'B'),
            10);
  EXPECT_GE(std::count(bar.begin(), bar.end(), 'B'), 3);
  // A small share still shows once there is room for it.
  EXPECT_EQ(phase_bar(std::array<double, 6>{0.96, 0, 0, 0, 0.04, 0}, 20).find('O'), 19u);
  EXPECT_EQ(phase_bar(std::array<double, 6>{1, 0, 0, 0, 0, 0}, 0), "");
}

TEST(MeterBarTest, BusyShareFillsItsPartOfTheWidth) {
  EXPECT_EQ(meter_bar(std::nullopt, 4), "    ");
  EXPECT_EQ(meter_bar(50.0, 10), "|||||     ");
  EXPECT_EQ(meter_bar(100.0, 3), "|||");
  EXPECT_EQ(meter_bar(250.0, 3), "|||");
  EXPECT_EQ(pressure_name(2), "critical");
  EXPECT_EQ(pressure_name(-1), "-");
}

}  // namespace
}  // namespace mlos::cli
