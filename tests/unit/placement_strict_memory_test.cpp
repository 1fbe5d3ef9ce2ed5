// SPDX-License-Identifier: Apache-2.0
// plan_placement with a strict memory binding: the bound nodes' free memory
// must cover memory_bytes, since the kernel cannot fall back elsewhere.
#include <gtest/gtest.h>

#include <vector>

#include "core/placement.h"

namespace mlos {
namespace {

using V = std::vector<int>;
constexpr uint64_t kGiB = uint64_t{1} << 30;

PlacementRequest strict(int cpus, uint64_t bytes, int node = -1) {
  PlacementRequest r;
  r.num_cpus = cpus;
  r.memory_bytes = bytes;
  r.numa_preference = node;
  r.strict_membind = true;
  return r;
}

// 4 nodes x 2 cores x 2 threads; node n holds CPUs 4n..4n+3 and 1 GiB free.
struct Machine {
  Topology t = make_uniform_topology(4, 2, 2);
  MemoryAvailability m{4 * kGiB, {{0, 1 * kGiB}, {1, 1 * kGiB}, {2, 1 * kGiB}, {3, 1 * kGiB}}};
};

TEST(PlacementStrictMemoryTest, FitsOnOneNodeWhenItsMemoryDoes) {
  Machine x;
  x.m.node_free_bytes[0] = kGiB / 2;  // node 0 too small: skipped
  auto p = plan_placement(x.t, x.t.all_cpus(), {}, x.m, strict(2, kGiB));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->nodes, V({1}));
  EXPECT_EQ(p->memory_policy, MLOS_MEMPOLICY_BIND);
}

TEST(PlacementStrictMemoryTest, SpansNodesForMemoryEvenWithoutCpusThere) {
  Machine x;
  auto p = plan_placement(x.t, x.t.all_cpus(), {}, x.m, strict(2, 3 * kGiB));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->nodes.size(), 3u);  // 3 GiB needs three 1 GiB nodes
  EXPECT_EQ(p->cpus.size(), 2u);
  EXPECT_EQ(p->memory_policy, MLOS_MEMPOLICY_BIND);
}

TEST(PlacementStrictMemoryTest, RefusesWhatNoBindingCanHold) {
  Machine x;
  EXPECT_EQ(plan_placement(x.t, x.t.all_cpus(), {}, x.m, strict(2, 2 * kGiB, /*node=*/1)).error().code,
            MLOS_ERR_INSUFFICIENT_MEMORY);
  PlacementRequest one = strict(2, 2 * kGiB);
  one.single_node = true;
  EXPECT_EQ(plan_placement(x.t, x.t.all_cpus(), {}, x.m, one).error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  // Only nodes 0 and 1 are allowed: their 2 GiB cannot hold 3 GiB.
  x.m.available_bytes = 8 * kGiB;
  EXPECT_EQ(plan_placement(x.t, CpuSet::range(0, 7), {}, x.m, strict(2, 3 * kGiB)).error().code,
            MLOS_ERR_INSUFFICIENT_MEMORY);
  // Without strict binding the same request is placed (preferred policy).
  PlacementRequest loose = strict(2, 3 * kGiB);
  loose.strict_membind = false;
  EXPECT_TRUE(plan_placement(x.t, CpuSet::range(0, 7), {}, x.m, loose).ok());
}

}  // namespace
}  // namespace mlos
