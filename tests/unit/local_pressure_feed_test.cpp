// SPDX-License-Identifier: Apache-2.0
// The embedded feed over a fixture /proc and a fixture cgroup v2 tree: it
// finds the nearest limited cgroup from /proc/<pid>/{mountinfo,cgroup},
// reports its working set against memory.max, and keeps the tightest of
// cgroup, node and job budget.
#include "engine/local_pressure_feed.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace mlos {
namespace {

namespace fs = std::filesystem;

class LocalPressureFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-feed-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    const fs::path proc = root_ / "proc", pid = proc / "4242";
    fs::create_directories(pid);
    fs::create_directories(root_ / "cg2" / "jobs" / "train");
    write(pid / "mountinfo", "30 1 0:26 / " + (root_ / "cg2").string() +
                                 " rw,nosuid - cgroup2 cgroup2 rw\n");
    write(pid / "cgroup", "0::/jobs/train\n");
    write(pid / "status", "Name:\ttrain\nRssAnon:\t  409600 kB\nRssShmem:\t  0 kB\n");  // 400 MiB
    write(proc / "meminfo", "MemTotal:  16777216 kB\nMemAvailable: 15728640 kB\n");  // 16 GiB, 15 free
    write(proc / "pressure" / "memory", "some avg10=1.50 avg60=0 avg300=0 total=1\nfull avg10=0.25 avg60=0 avg300=0 total=1\n");
    // The leaf has no limit; its parent has 1 GiB.
    write(cg("jobs/train/memory.max"), "max\n");
    write(cg("jobs/memory.max"), "1073741824\n");
    write(cg("jobs/memory.current"), "536870912\n");  // 512 MiB
    write(cg("jobs/memory.stat"), "anon 400000000\ninactive_file 134217728\n");  // 128 MiB reclaimable
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path cg(const std::string& rel) { return root_ / "cg2" / rel; }
  std::string proc() const { return (root_ / "proc").string(); }
  fs::path root_;
};

TEST_F(LocalPressureFeedTest, ReportsTheNearestLimitedV2CgroupsWorkingSet) {
  LocalPressureFeed feed(4242, 0, MemoryThresholds{}, proc());
  auto r = feed.sample(1);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->figures.source, MemorySource::kCgroup);
  EXPECT_EQ(r->figures.budget_bytes, 1073741824u);
  EXPECT_EQ(r->figures.available_bytes, 1073741824u - (536870912u - 134217728u));  // limit - working set
  EXPECT_DOUBLE_EQ(r->figures.psi_some_avg10, 1.5);
  EXPECT_DOUBLE_EQ(r->figures.psi_full_avg10, 0.25);
  EXPECT_EQ(r->level, MLOS_MEMORY_PRESSURE_NORMAL);

  // The working set grows to 95 % of the limit: CRITICAL at once.
  write(cg("jobs/memory.current"), std::to_string(1073741824u / 100 * 95 + 134217728u) + "\n");
  r = feed.sample(2);
  EXPECT_EQ(r->level, MLOS_MEMORY_PRESSURE_CRITICAL);
  EXPECT_EQ(r->sequence, 1u);
  EXPECT_EQ(r->detected_ns, 2u);
}

TEST_F(LocalPressureFeedTest, AJobBudgetTighterThanTheCgroupWins) {
  // 400 MiB resident of a 440 MiB budget: 9 % headroom.
  LocalPressureFeed feed(4242, 440ull << 20, MemoryThresholds{}, proc());
  auto r = feed.sample(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->figures.source, MemorySource::kJob);
  EXPECT_EQ(r->figures.available_bytes, 40ull << 20);
  EXPECT_EQ(r->level, MLOS_MEMORY_PRESSURE_MODERATE);
}

TEST_F(LocalPressureFeedTest, WithoutACgroupLimitTheNodeCounts) {
  write(cg("jobs/memory.max"), "max\n");
  LocalPressureFeed feed(4242, 0, MemoryThresholds{}, proc());
  auto r = feed.sample(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->figures.source, MemorySource::kNode);
  EXPECT_EQ(r->figures.budget_bytes, 16ull << 30);
}

TEST_F(LocalPressureFeedTest, NothingReadableIsUnsupported) {
  fs::remove(root_ / "proc" / "meminfo");
  write(cg("jobs/memory.max"), "max\n");
  LocalPressureFeed feed(4242, 0, MemoryThresholds{}, proc());
  auto r = feed.sample(1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, MLOS_ERR_UNSUPPORTED);
}

}  // namespace
}  // namespace mlos
