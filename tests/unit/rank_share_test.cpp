// SPDX-License-Identifier: Apache-2.0
// Splitting an allocation between local ranks (core/rank_share) and deciding
// when a process is a rank to split (engine/rank_bound), on synthetic
// topologies and an injected environment.
#include "core/rank_share.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/rank_bound.h"
#include "fakes/fake_kernel.h"
#include "fakes/hwloc_fixture.h"
#include "os/hwloc_topology.h"

namespace mlos {
namespace {

using mlos_test::hwloc;

std::vector<RankShare> all_shares(const Topology& t, const CpuSet& pool, int world) {
  std::vector<RankShare> out;
  for (int r = 0; r < world; ++r) {
    auto s = rank_share(t, pool, r, world);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    out.push_back(s.ok() ? *s : RankShare{});
  }
  return out;
}

std::vector<std::string> lists(const std::vector<RankShare>& shares) {
  std::vector<std::string> v;
  for (const auto& s : shares) v.push_back(s.cpus.to_list());
  return v;
}

using L = std::vector<std::string>;

TEST(RankShare, TwoCpusTwoRanksGetOneEachAndOneThread) {
  // This machine's shape: one node, two cores.
  Topology t = make_uniform_topology(1, 2, 1);
  auto s = all_shares(t, CpuSet::range(0, 1), 2);
  EXPECT_EQ(lists(s), (L{"0", "1"}));
  EXPECT_EQ(s[0].physical_cores, 1);
  EXPECT_EQ(s[1].physical_cores, 1);
  EXPECT_FALSE(s[0].shared);
}

TEST(RankShare, RemainderGoesToTheLaterRanks) {
  Topology t = make_uniform_topology(1, 3, 1);
  auto s = all_shares(t, CpuSet::range(0, 2), 2);
  EXPECT_EQ(lists(s), (L{"0", "1-2"}));
  EXPECT_EQ(s[0].physical_cores, 1);
  EXPECT_EQ(s[1].physical_cores, 2);
}

TEST(RankShare, OneRankGetsEverything) {
  Topology t = make_uniform_topology(2, 4, 2);
  auto s = all_shares(t, t.all_cpus(), 1);
  EXPECT_EQ(s[0].cpus, t.all_cpus());
  EXPECT_EQ(s[0].physical_cores, 8);
  EXPECT_EQ(s[0].nodes, (std::vector<int>{0, 1}));
}

TEST(RankShare, SharesFollowNodesAndKeepSmtSiblingsTogether) {
  // 2 nodes x 4 cores x 2 PUs, siblings consecutive: node 0 = 0-7.
  Topology t = make_uniform_topology(2, 4, 2);
  EXPECT_EQ(lists(all_shares(t, t.all_cpus(), 2)), (L{"0-7", "8-15"}));
  EXPECT_EQ(lists(all_shares(t, t.all_cpus(), 4)), (L{"0-3", "4-7", "8-11", "12-15"}));
  // 3 ranks: 2 on node 0 (tie on remainders goes to the lower node), 1 on
  // node 1; none straddles the boundary at 8.
  auto three = all_shares(t, t.all_cpus(), 3);
  EXPECT_EQ(lists(three), (L{"0-3", "4-7", "8-15"}));
  for (const auto& s : three) EXPECT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(three[2].physical_cores, 4);
  // 8 ranks: one core (both PUs) each.
  auto eight = all_shares(t, t.all_cpus(), 8);
  EXPECT_EQ(eight[1].cpus.to_list(), "2-3");
  EXPECT_EQ(eight[1].physical_cores, 1);
}

TEST(RankShare, SiblingsFarApartStayOnTheirCore) {
  // 1 node, 4 cores, PUs 0-3 first threads and 4-7 their siblings.
  Topology t = make_uniform_topology(1, 4, 2, /*siblings_far_apart=*/true);
  EXPECT_EQ(lists(all_shares(t, t.all_cpus(), 2)), (L{"0-1,4-5", "2-3,6-7"}));
}

TEST(RankShare, MoreRanksThanCoresSplitsHardwareThreads) {
  Topology t = make_uniform_topology(1, 2, 2);  // cores {0,1}, {2,3}
  auto s = all_shares(t, t.all_cpus(), 4);
  EXPECT_EQ(lists(s), (L{"0", "1", "2", "3"}));
  EXPECT_EQ(s[3].physical_cores, 1);
  auto three = all_shares(t, t.all_cpus(), 3);
  // Three PUs' worth of units, contiguous: 0 | 1 | 2-3.
  EXPECT_EQ(lists(three), (L{"0", "1", "2-3"}));
}

TEST(RankShare, MoreRanksThanCpusShareCpusRoundRobin) {
  Topology t = make_uniform_topology(1, 2, 1);
  auto s = all_shares(t, CpuSet::range(0, 1), 3);
  EXPECT_EQ(lists(s), (L{"0", "1", "0"}));
  for (const auto& x : s) {
    EXPECT_TRUE(x.shared);
    EXPECT_EQ(x.physical_cores, 1);
  }
}

TEST(RankShare, FewerRanksThanNodesGetWholeNodes) {
  Topology t = hwloc("synthetic:pack:2 numa:2 core:2 pu:1");  // 4 nodes of 2 CPUs
  ASSERT_EQ(t.nodes.size(), 4u);
  auto two = all_shares(t, t.all_cpus(), 2);
  EXPECT_EQ(lists(two), (L{"0-3", "4-7"}));
  EXPECT_EQ(two[1].nodes.size(), 2u);
  auto three = all_shares(t, t.all_cpus(), 3);
  // Whole nodes, every rank at least one: 2 nodes, 1, 1.
  EXPECT_EQ(lists(three), (L{"0-3", "4-5", "6-7"}));
}

TEST(RankShare, OnlyThePoolIsSplit) {
  // mlos run --cpus 6 on a machine of two 4-CPU nodes (0-3, 4-7) got
  // 2-7: 2 cores on node 0, 4 on node 1. Quotas 2*2/6 = 0.67 and
  // 2*4/6 = 1.33 round to one rank per node; none straddles.
  Topology t = make_uniform_topology(2, 4, 1);
  auto s = all_shares(t, CpuSet::range(2, 7), 2);
  EXPECT_EQ(lists(s), (L{"2-3", "4-7"}));
}

TEST(RankShare, AsymmetricNodesLeaveATinyNodeOutRatherThanStarveARank) {
  // Node 0: 1 core, node 1: 7 cores; 2 ranks both go to node 1 (3 and 4
  // cores) instead of 1 and 7.
  Topology t = make_uniform_topology(2, 7, 1);
  auto s = all_shares(t, CpuSet::of({0}) | CpuSet::range(7, 13), 2);
  EXPECT_EQ(lists(s), (L{"7-9", "10-13"}));
}

TEST(RankShare, PropertiesHoldOnManyShapes) {
  const char* shapes[] = {"synthetic:pack:1 numa:1 core:2 pu:1", "synthetic:pack:1 numa:2 core:3 pu:2",
                          "synthetic:pack:2 numa:2 core:4 pu:2", "synthetic:pack:1 numa:3 core:5 pu:1"};
  for (const char* shape : shapes) {
    Topology t = hwloc(shape);
    const CpuSet pool = t.all_cpus();
    for (int world = 1; world <= pool.count() + 2; ++world) {
      auto shares = all_shares(t, pool, world);
      CpuSet seen;
      for (int r = 0; r < world; ++r) {
        const RankShare& s = shares[r];
        SCOPED_TRACE(std::string(shape) + " world " + std::to_string(world) + " rank " + std::to_string(r));
        EXPECT_FALSE(s.cpus.empty());
        EXPECT_TRUE(s.cpus.is_subset_of(pool));
        EXPECT_GE(s.physical_cores, 1);
        if (world <= pool.count()) {
          EXPECT_FALSE(s.cpus.intersects(seen)) << "shares overlap";
          // Shares fit in nodes whenever there are at least as many ranks
          // as nodes.
          if (static_cast<size_t>(world) >= t.nodes.size()) EXPECT_EQ(s.nodes.size(), 1u);
        }
        seen = seen | s.cpus;
      }
      if (world <= pool.count() && static_cast<size_t>(world) <= t.nodes.size()) EXPECT_EQ(seen, pool);
    }
  }
}

TEST(RankShare, BadArgumentsAreRefused) {
  Topology t = make_uniform_topology(1, 2, 1);
  EXPECT_EQ(rank_share(t, t.all_cpus(), 2, 2).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rank_share(t, t.all_cpus(), -1, 2).error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rank_share(t, t.all_cpus(), 0, 0).error().code, MLOS_ERR_INVALID_ARGUMENT);
  auto off = rank_share(t, CpuSet::of({40}), 0, 2);
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.error().message.find("40"), std::string::npos) << off.error().message;
}

// --- decide_rank_split: when a process is a rank to split ------------------

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Result<std::optional<RankSplit>> decide(const Env& e, const CpuSet& affinity) {
  static const Topology t = make_uniform_topology(1, 4, 1);
  return decide_rank_split(t, affinity, e.lookup());
}

TEST(RankSplit, ARankInsideMlosRunIsSplit) {
  Env e{{{"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}};
  auto d = decide(e, CpuSet::range(0, 3));
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->share.cpus.to_list(), "2-3");
  EXPECT_EQ((*d)->share.physical_cores, 2);
  EXPECT_EQ((*d)->envelope.to_list(), "0-3");
}

TEST(RankSplit, NotSplitWhenNotARankNotInsideMlosRunAlreadyPlacedOrTurnedOff) {
  const CpuSet all = CpuSet::range(0, 3);
  Env single{{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}, {"MLOS_CPUS", "0-3"}}};
  Env no_launcher{{{"MLOS_CPUS", "0-3"}}};
  Env no_mlos_run{{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}};
  Env off{{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}, {"MLOS_RANK_SPLIT", "0"}}};
  Env rank{{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}};
  for (const Env* e : {&single, &no_launcher, &no_mlos_run, &off}) {
    auto d = decide(*e, all);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_FALSE(d->has_value());
  }
  // Placed by someone else (numactl, taskset, a parent's split): kept.
  auto placed = decide(rank, CpuSet::range(2, 3));
  ASSERT_TRUE(placed.ok());
  EXPECT_FALSE(placed->has_value());
  // Splitting is idempotent through that rule: a child of a split rank
  // inherits the share, which is not mlos run's CPUs.
  auto first = decide(rank, all);
  ASSERT_TRUE(first.ok() && first->has_value());
  auto child = decide(rank, (*first)->share.cpus);
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->has_value());
}

TEST(RankSplit, MalformedLauncherVariablesAreErrorsNamingThem) {
  const CpuSet all = CpuSet::range(0, 3);
  struct Case {
    std::map<std::string, std::string> vars;
    const char* names;
  } cases[] = {
      {{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "two"}, {"MLOS_CPUS", "0-3"}}, "LOCAL_WORLD_SIZE"},
      {{{"LOCAL_RANK", "1x"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}, "LOCAL_RANK"},
      {{{"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}, "LOCAL_RANK"},
      {{{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}, "LOCAL_RANK=2"},
      {{{"LOCAL_RANK", "-1"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "0-3"}}, "LOCAL_RANK=-1"},
      {{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "0"}, {"MLOS_CPUS", "0-3"}}, "LOCAL_WORLD_SIZE=0"},
      {{{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}, {"MLOS_CPUS", "zero"}}, "MLOS_CPUS"},
  };
  for (const auto& c : cases) {
    auto d = decide(Env{c.vars}, all);
    ASSERT_FALSE(d.ok()) << c.names;
    EXPECT_EQ(d.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(d.error().message.find(c.names), std::string::npos) << d.error().message;
  }
}

TEST(RankSplit, ApplyMovesOnlyThreadsStillOnTheWholeAllocation) {
  mlos_test::FakeKernel k;
  k.threads[10].affinity = CpuSet::range(0, 3);  // main thread
  k.threads[11].affinity = CpuSet::range(0, 3);  // a pool thread
  k.threads[12].affinity = CpuSet::of({0});      // bound by someone: kept
  RankSplit split;
  split.envelope = CpuSet::range(0, 3);
  split.share.cpus = CpuSet::range(2, 3);
  // 13 exited before it was looked at: skipped.
  ASSERT_TRUE(apply_rank_split(k, split, {10, 11, 12, 13}).ok());
  EXPECT_EQ(k.threads[10].affinity.to_list(), "2-3");
  EXPECT_EQ(k.threads[11].affinity.to_list(), "2-3");
  EXPECT_EQ(k.threads[12].affinity.to_list(), "0");
  k.threads[14].affinity = CpuSet::range(0, 3);
  k.fail_set_affinity = true;
  EXPECT_FALSE(apply_rank_split(k, split, {14}).ok());
}

}  // namespace
}  // namespace mlos
