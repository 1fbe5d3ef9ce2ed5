// SPDX-License-Identifier: Apache-2.0
// plan_placement: choosing a NUMA node and CPUs for a request, inside the
// allowed CPUs, around other claims, with memory steering the node choice.
#include "core/placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fakes/hwloc_fixture.h"
#include "os/hwloc_topology.h"

namespace mlos {
namespace {

using V = std::vector<int>;
constexpr uint64_t kGiB = uint64_t{1} << 30;

PlacementRequest req(int cpus) {
  PlacementRequest r;
  r.num_cpus = cpus;
  return r;
}

Placement ok(const Result<Placement>& r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Placement();
}

int err(const Result<Placement>& r) { return r.ok() ? 0 : r.error().code; }

// 2 nodes x 4 cores x 2 threads, siblings consecutive: node 0 = 0-7.
Topology two_nodes() { return make_uniform_topology(2, 4, 2); }

using mlos_test::hwloc;

TEST(PlacementTest, AutoOnIdleMachineTakesLowestNodeOnePuPerCore) {
  Topology t = two_nodes();
  Placement p = ok(plan_placement(t, t.all_cpus(), {}, {}, req(4)));
  EXPECT_EQ(p.cpus, V({0, 2, 4, 6}));
  EXPECT_EQ(p.cpu_set.to_list(), "0,2,4,6");
  EXPECT_EQ(p.nodes, V({0}));
  EXPECT_EQ(p.primary_node, 0);
  EXPECT_EQ(p.physical_cores, 4);
  EXPECT_EQ(p.memory_policy, MLOS_MEMPOLICY_PREFERRED);
}

TEST(PlacementTest, AutoPicksTheBestFittingNode) {
  Topology t = two_nodes();
  const CpuSet allowed = CpuSet::range(0, 11);  // node 1 only has cores 4,5
  // Smallest leftover wins when both nodes give whole cores.
  Placement small = ok(plan_placement(t, allowed, {}, {}, req(2)));
  EXPECT_EQ(small.nodes, V({1}));
  EXPECT_EQ(small.cpus, V({8, 10}));
  // Node 1 would need SMT siblings for 3 CPUs; node 0 has 3 whole cores.
  Placement three = ok(plan_placement(t, allowed, {}, {}, req(3)));
  EXPECT_EQ(three.nodes, V({0}));
  EXPECT_EQ(three.cpus, V({0, 2, 4}));
  EXPECT_EQ(three.physical_cores, 3);
}

TEST(PlacementTest, WholeCoresBeforeSiblingsConsecutiveNumbering) {
  Topology t = make_uniform_topology(1, 4, 2, /*siblings_far_apart=*/false);
  Placement p = ok(plan_placement(t, t.all_cpus(), {}, {}, req(6)));
  EXPECT_EQ(p.cpus, V({0, 2, 4, 6, 1, 3}));
  EXPECT_EQ(p.cpu_set.to_list(), "0-4,6");
  EXPECT_EQ(p.physical_cores, 4);
  Placement all = ok(plan_placement(t, t.all_cpus(), {}, {}, req(8)));
  EXPECT_EQ(all.cpus, V({0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(all.physical_cores, 4);
}

TEST(PlacementTest, WholeCoresBeforeSiblingsFarApartNumbering) {
  // Core k of node 0 has PUs {k, k+8}; node 0 = 0-3,8-11.
  Topology t = make_uniform_topology(2, 4, 2, /*siblings_far_apart=*/true);
  Placement four = ok(plan_placement(t, t.all_cpus(), {}, {}, req(4)));
  EXPECT_EQ(four.cpus, V({0, 1, 2, 3}));
  EXPECT_EQ(four.physical_cores, 4);
  Placement six = ok(plan_placement(t, t.all_cpus(), {}, {}, req(6)));
  EXPECT_EQ(six.cpus, V({0, 1, 2, 3, 8, 9}));
  EXPECT_EQ(six.physical_cores, 4);
  EXPECT_EQ(six.nodes, V({0}));
  PlacementRequest on1 = req(3);
  on1.numa_preference = 1;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, on1)).cpus, V({4, 5, 6}));
}

TEST(PlacementTest, NeverOutsideAllowed) {
  Topology t = two_nodes();
  // taskset -c 2,3,5 (plus a CPU this machine does not have).
  const CpuSet allowed = CpuSet::of({2, 3, 5, 100});
  Placement p = ok(plan_placement(t, allowed, {}, {}, req(3)));
  // Core 1 (2,3) is whole, core 2 only has 5: 2 and 5 first, then 3.
  EXPECT_EQ(p.cpus, V({2, 5, 3}));
  EXPECT_EQ(p.physical_cores, 2);
  auto too_many = plan_placement(t, allowed, {}, {}, req(4));
  EXPECT_EQ(err(too_many), MLOS_ERR_INSUFFICIENT_CPUS);
  EXPECT_NE(too_many.error().message.find("requested 4 CPUs"), std::string::npos) << too_many.error().message;
  EXPECT_NE(too_many.error().message.find("2-3,5"), std::string::npos) << too_many.error().message;

  // A cgroup confined to node 1.
  Placement cg = ok(plan_placement(t, CpuSet::range(8, 15), {}, {}, req(4)));
  EXPECT_EQ(cg.nodes, V({1}));
  EXPECT_EQ(cg.cpus, V({8, 10, 12, 14}));

  // Over many allowed masks and every size they allow: always inside.
  for (uint32_t mask = 1; mask < (1u << 16); mask += 997) {
    CpuSet a;
    for (int c = 0; c < 16; ++c) {
      if (mask & (1u << c)) a.set(c);
    }
    for (int n = 1; n <= a.count(); ++n) {
      Placement q = ok(plan_placement(t, a, {}, {}, req(n)));
      EXPECT_EQ(static_cast<int>(q.cpus.size()), n);
      EXPECT_EQ(q.cpu_set.count(), n) << "duplicate CPU";
      EXPECT_TRUE(q.cpu_set.is_subset_of(a)) << q.cpu_set.to_list() << " not in " << a.to_list();
    }
  }
}

TEST(PlacementTest, PreferredNodeHonoured) {
  Topology t = two_nodes();
  PlacementRequest r = req(2);
  r.numa_preference = 1;
  Placement p = ok(plan_placement(t, t.all_cpus(), {}, {}, r));
  EXPECT_EQ(p.nodes, V({1}));
  EXPECT_EQ(p.primary_node, 1);
  EXPECT_EQ(p.cpus, V({8, 10}));
  // Even when node 1 must double up on cores and node 0 is idle.
  r.num_cpus = 6;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, r)).cpus, V({8, 10, 12, 14, 9, 11}));
  // Never spills onto another node.
  r.num_cpus = 9;
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, r)), MLOS_ERR_INSUFFICIENT_CPUS);
  CpuUsage busy;
  busy.exclusive = CpuSet::range(8, 13);
  r.num_cpus = 4;
  auto b = plan_placement(t, t.all_cpus(), busy, {}, r);
  EXPECT_EQ(err(b), MLOS_ERR_CPUS_BUSY);
  EXPECT_NE(b.error().message.find("8-13"), std::string::npos) << b.error().message;
  r.num_cpus = 2;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), busy, {}, r)).cpus, V({14, 15}));
}

TEST(PlacementTest, InvalidArguments) {
  Topology t = two_nodes();
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, req(0))), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, req(-3))), MLOS_ERR_INVALID_ARGUMENT);
  PlacementRequest r = req(1);
  r.numa_preference = -2;
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, r)), MLOS_ERR_INVALID_ARGUMENT);
}

TEST(PlacementTest, BadNumaNode) {
  Topology t = two_nodes();
  PlacementRequest r = req(1);
  r.numa_preference = 2;
  auto absent = plan_placement(t, t.all_cpus(), {}, {}, r);
  EXPECT_EQ(err(absent), MLOS_ERR_INVALID_NUMA_NODE);
  EXPECT_NE(absent.error().message.find("NUMA node 2"), std::string::npos) << absent.error().message;
  // Node 1 exists but the process may not run there.
  r.numa_preference = 1;
  EXPECT_EQ(err(plan_placement(t, CpuSet::range(0, 7), {}, {}, r)), MLOS_ERR_INVALID_NUMA_NODE);
}

TEST(PlacementTest, TooManyCpus) {
  Topology t = two_nodes();
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, req(17))), MLOS_ERR_INSUFFICIENT_CPUS);
  EXPECT_EQ(err(plan_placement(t, CpuSet(), {}, {}, req(1))), MLOS_ERR_INSUFFICIENT_CPUS);
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, req(16))).cpu_set.to_list(), "0-15");
}

TEST(PlacementTest, CpusHeldExclusivelyByOthers) {
  Topology t = two_nodes();
  CpuUsage u;
  u.exclusive = CpuSet::range(0, 13);
  auto r = plan_placement(t, t.all_cpus(), u, {}, req(4));
  EXPECT_EQ(err(r), MLOS_ERR_CPUS_BUSY);
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), u, {}, req(2))).cpus, V({14, 15}));
  // Node 0 fully held: an auto request moves to node 1.
  u.exclusive = CpuSet::range(0, 7);
  Placement p = ok(plan_placement(t, t.all_cpus(), u, {}, req(4)));
  EXPECT_EQ(p.nodes, V({1}));
  EXPECT_EQ(p.cpus, V({8, 10, 12, 14}));
}

TEST(PlacementTest, ExclusiveRequestAvoidsSharedClaims) {
  Topology t = make_uniform_topology(1, 4, 2);
  CpuUsage u;
  u.shared_load = {{0, 1}, {2, 1}, {4, 1}, {6, 1}};
  PlacementRequest r = req(4);
  r.exclusive = true;
  Placement p = ok(plan_placement(t, t.all_cpus(), u, {}, r));
  EXPECT_EQ(p.cpus, V({1, 3, 5, 7}));
  r.num_cpus = 5;
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), u, {}, r)), MLOS_ERR_CPUS_BUSY);
  // A zero count in the map is no claim.
  u.shared_load = {{0, 0}};
  r.num_cpus = 1;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), u, {}, r)).cpus, V({0}));
}

TEST(PlacementTest, SharedRequestMayOverlapSharedButNeverExclusive) {
  Topology t = make_uniform_topology(1, 4, 2);
  CpuUsage u;
  u.exclusive = CpuSet::range(0, 3);
  u.shared_load = {{4, 1}, {5, 1}, {6, 2}, {7, 2}};
  Placement p = ok(plan_placement(t, t.all_cpus(), u, {}, req(4)));
  EXPECT_EQ(p.cpus, V({4, 6, 5, 7}));
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), u, {}, req(5))), MLOS_ERR_CPUS_BUSY);
  PlacementRequest ex = req(1);
  ex.exclusive = true;
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), u, {}, ex)), MLOS_ERR_CPUS_BUSY);
}

TEST(PlacementTest, SharedRequestPrefersLeastLoaded) {
  Topology one = make_uniform_topology(1, 4, 2);
  CpuUsage u;
  u.shared_load = {{0, 2}, {2, 1}};
  // Cores by load: 2 (0), 3 (0), 1 (1), 0 (2).
  EXPECT_EQ(ok(plan_placement(one, one.all_cpus(), u, {}, req(2))).cpus, V({4, 6}));
  EXPECT_EQ(ok(plan_placement(one, one.all_cpus(), u, {}, req(3))).cpus, V({4, 6, 2}));
  EXPECT_EQ(ok(plan_placement(one, one.all_cpus(), u, {}, req(5))).cpus, V({4, 6, 2, 0, 5}));

  // Across nodes: a loaded node 0 loses to an idle node 1.
  Topology t = two_nodes();
  CpuUsage n0;
  n0.shared_load = {{0, 1}, {2, 1}, {4, 1}, {6, 1}};
  Placement p = ok(plan_placement(t, t.all_cpus(), n0, {}, req(2)));
  EXPECT_EQ(p.nodes, V({1}));
  EXPECT_EQ(p.cpus, V({8, 10}));
}

TEST(PlacementTest, InsufficientMemory) {
  Topology t = two_nodes();
  MemoryAvailability m;
  m.available_bytes = 1 * kGiB;
  PlacementRequest r = req(1);
  r.memory_bytes = 2 * kGiB;
  auto e = plan_placement(t, t.all_cpus(), {}, m, r);
  EXPECT_EQ(err(e), MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_NE(e.error().message.find("2.00 GiB"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("1.00 GiB"), std::string::npos) << e.error().message;
  r.memory_bytes = 1 * kGiB;  // exactly what is available fits
  EXPECT_TRUE(plan_placement(t, t.all_cpus(), {}, m, r).ok());
}

TEST(PlacementTest, NodeMemoryFitSteersNodeChoice) {
  Topology t = two_nodes();
  MemoryAvailability m;
  m.node_free_bytes = {{0, 1 * kGiB}, {1, 8 * kGiB}};
  PlacementRequest r = req(2);
  r.memory_bytes = 4 * kGiB;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, m, r)).nodes, V({1}));
  // Memory fit outranks whole cores: node 1 has only cores 4,5 allowed.
  r.num_cpus = 4;
  Placement smt = ok(plan_placement(t, CpuSet::range(0, 11), {}, m, r));
  EXPECT_EQ(smt.nodes, V({1}));
  EXPECT_EQ(smt.cpus, V({8, 10, 9, 11}));
  EXPECT_EQ(smt.physical_cores, 2);
  // Unknown free memory counts as fitting; lowest index breaks the tie.
  m.node_free_bytes = {{0, 1 * kGiB}};
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, m, r)).nodes, V({1}));
  m.node_free_bytes.clear();
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, m, r)).nodes, V({0}));
  // No node fits: still placed (a preference, not a refusal).
  m.node_free_bytes = {{0, 1 * kGiB}, {1, 1 * kGiB}};
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, m, r)).nodes, V({0}));
}

TEST(PlacementTest, SpansNodesWhenNoSingleNodeFits) {
  Topology t = two_nodes();
  Placement p = ok(plan_placement(t, t.all_cpus(), {}, {}, req(12)));
  EXPECT_EQ(p.nodes, V({0, 1}));
  EXPECT_EQ(p.primary_node, 0);
  // Whole cores on every spanned node before any SMT sibling.
  EXPECT_EQ(p.cpus, V({0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7}));
  EXPECT_EQ(p.physical_cores, 8);
  EXPECT_EQ(p.memory_policy, MLOS_MEMPOLICY_INTERLEAVE);
  PlacementRequest strict = req(12);
  strict.strict_membind = true;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, strict)).memory_policy, MLOS_MEMPOLICY_BIND);
}

TEST(PlacementTest, SpanningUsesFewestNodesLargestFirst) {
  // 4 nodes x 2 cores x 2 threads; node n = 4n..4n+3.
  Topology t = make_uniform_topology(4, 2, 2);
  const CpuSet allowed = CpuSet::of({0, 1, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15});
  Placement p = ok(plan_placement(t, allowed, {}, {}, req(6)));
  EXPECT_EQ(p.nodes, V({3, 1}));
  EXPECT_EQ(p.primary_node, 3);
  // Idle whole cores of both nodes first (core order), then the partial core,
  // then second threads.
  EXPECT_EQ(p.cpus, V({4, 12, 14, 6, 5, 13}));
  EXPECT_EQ(p.memory_policy, MLOS_MEMPOLICY_INTERLEAVE);
  Placement p9 = ok(plan_placement(t, allowed, {}, {}, req(9)));
  EXPECT_EQ(p9.nodes, V({3, 1, 2}));
  EXPECT_EQ(p9.cpu_set.to_list(), "4-6,8-10,12-14");
  // Spanning stays out of exclusively held CPUs; if they leave too few: busy.
  CpuUsage u;
  u.exclusive = CpuSet::of({12, 13, 14, 15});
  Placement around = ok(plan_placement(t, allowed, u, {}, req(6)));
  EXPECT_FALSE(around.cpu_set.intersects(u.exclusive));
  EXPECT_EQ(around.nodes, V({1, 2}));
  EXPECT_EQ(err(plan_placement(t, allowed, u, {}, req(9))), MLOS_ERR_CPUS_BUSY);
}

TEST(PlacementTest, SingleNodeRefusesToSpan) {
  Topology t = two_nodes();
  PlacementRequest r = req(12);
  r.single_node = true;
  auto e = plan_placement(t, t.all_cpus(), {}, {}, r);
  EXPECT_EQ(err(e), MLOS_ERR_INSUFFICIENT_CPUS);
  EXPECT_NE(e.error().message.find("single NUMA node"), std::string::npos) << e.error().message;
  // Each node is big enough but partly held by others: busy, not too small.
  CpuUsage u;
  u.exclusive = CpuSet::of({0, 1, 8, 9});
  r.num_cpus = 8;
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), u, {}, r)), MLOS_ERR_CPUS_BUSY);
  r.single_node = false;
  Placement spanned = ok(plan_placement(t, t.all_cpus(), u, {}, r));
  EXPECT_EQ(spanned.nodes.size(), 2u);
  EXPECT_FALSE(spanned.cpu_set.intersects(u.exclusive));
  r.single_node = true;
  r.num_cpus = 6;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), u, {}, r)).cpus, V({2, 4, 6, 3, 5, 7}));
}

TEST(PlacementTest, StrictMembindGivesBind) {
  Topology t = two_nodes();
  PlacementRequest r = req(2);
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, r)).memory_policy, MLOS_MEMPOLICY_PREFERRED);
  r.strict_membind = true;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, r)).memory_policy, MLOS_MEMPOLICY_BIND);
}

TEST(PlacementTest, AsymmetricNodesFromXml) {
  // Node 0: 4 cores (0-7); node 1: 2 cores (8-11).
  Topology t = hwloc(std::string("xml:") + MLOS_FIXTURES_DIR + "/asymmetric_nodes.xml");
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, req(2))).cpus, V({8, 10}));
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, req(3))).cpus, V({0, 2, 4}));
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, req(5))).cpus, V({0, 2, 4, 6, 1}));
  Placement span = ok(plan_placement(t, t.all_cpus(), {}, {}, req(10)));
  EXPECT_EQ(span.nodes, V({0, 1}));
  EXPECT_EQ(span.cpus, V({0, 2, 4, 6, 8, 10, 1, 3, 5, 7}));
  EXPECT_EQ(span.physical_cores, 6);
  PlacementRequest on1 = req(5);
  on1.numa_preference = 1;
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, on1)), MLOS_ERR_INSUFFICIENT_CPUS);
  EXPECT_EQ(err(plan_placement(t, t.all_cpus(), {}, {}, req(13))), MLOS_ERR_INSUFFICIENT_CPUS);
}

TEST(PlacementTest, FourNodeSyntheticFromHwloc) {
  Topology t = hwloc("synthetic:pack:2 numa:2 core:8 pu:2");
  ASSERT_EQ(t.nodes.size(), 4u);
  Placement p8 = ok(plan_placement(t, t.all_cpus(), {}, {}, req(8)));
  EXPECT_EQ(p8.nodes, V({0}));
  EXPECT_EQ(p8.cpus, V({0, 2, 4, 6, 8, 10, 12, 14}));
  // Node 0 held exclusively by another job: a 16-CPU exclusive job gets node 1.
  CpuUsage u;
  u.exclusive = CpuSet::range(0, 15);
  PlacementRequest ex = req(16);
  ex.exclusive = true;
  Placement p16 = ok(plan_placement(t, t.all_cpus(), u, {}, ex));
  EXPECT_EQ(p16.nodes, V({1}));
  EXPECT_EQ(p16.cpu_set.to_list(), "16-31");
  EXPECT_EQ(p16.cpus[7], 30);
  EXPECT_EQ(p16.cpus[8], 17);
  EXPECT_EQ(p16.physical_cores, 8);
  Placement p40 = ok(plan_placement(t, t.all_cpus(), {}, {}, req(40)));
  EXPECT_EQ(p40.nodes, V({0, 1, 2}));
  EXPECT_EQ(p40.cpu_set.to_list(), "0-32,34,36,38,40,42,44,46");
  EXPECT_EQ(p40.physical_cores, 24);
  PlacementRequest on3 = req(4);
  on3.numa_preference = 3;
  EXPECT_EQ(ok(plan_placement(t, t.all_cpus(), {}, {}, on3)).cpus, V({48, 50, 52, 54}));
}

}  // namespace
}  // namespace mlos
