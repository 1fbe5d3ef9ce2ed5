// SPDX-License-Identifier: Apache-2.0
// Topology: the hand-built uniform model, and os::load_topology from hwloc
// synthetic descriptions and XML fixtures (including a GPU on one node).
#include "core/topology.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "os/hwloc_topology.h"

namespace mlos {
namespace {

const std::string kFixtures = MLOS_FIXTURES_DIR;

Topology load(const std::string& spec) {
  auto src = os::TopologySource::parse(spec);
  EXPECT_TRUE(src.ok()) << spec;
  if (!src.ok()) return Topology();
  auto t = os::load_topology(*src);
  EXPECT_TRUE(t.ok()) << spec << ": " << (t.ok() ? "" : t.error().describe());
  return t.ok() ? std::move(t).value() : Topology();
}

// Every PU of every core is on that core's node, and core_of_cpu maps back.
void expect_consistent(const Topology& t) {
  std::set<int> seen;
  for (size_t i = 0; i < t.cores.size(); ++i) {
    const Core& c = t.cores[i];
    EXPECT_EQ(c.index, static_cast<int>(i));
    for (int pu : c.pus) {
      EXPECT_TRUE(seen.insert(pu).second) << "PU " << pu << " in two cores";
      EXPECT_EQ(t.core_of_cpu(pu), static_cast<int>(i));
      EXPECT_EQ(t.node_of_cpu(pu), c.numa_node);
      ASSERT_NE(t.node(c.numa_node), nullptr);
      EXPECT_TRUE(t.node(c.numa_node)->cpus.test(pu));
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), t.all_cpus().count());
}

TEST(TopologyTest, UniformConsecutiveSiblings) {
  Topology t = make_uniform_topology(2, 4, 2, /*siblings_far_apart=*/false);
  ASSERT_EQ(t.nodes.size(), 2u);
  ASSERT_EQ(t.cores.size(), 8u);
  EXPECT_EQ(t.nodes[0].cpus.to_list(), "0-7");
  EXPECT_EQ(t.nodes[1].cpus.to_list(), "8-15");
  EXPECT_EQ(t.nodes[1].cores, std::vector<int>({4, 5, 6, 7}));
  EXPECT_EQ(t.cores[5].pus, std::vector<int>({10, 11}));
  EXPECT_EQ(t.nodes[0].total_bytes, uint64_t{64} << 30);
  EXPECT_EQ(t.all_cpus().to_list(), "0-15");
  EXPECT_EQ(t.core_of_cpu(11), 5);
  EXPECT_EQ(t.node_of_cpu(11), 1);
  EXPECT_EQ(t.core_of_cpu(16), -1);
  EXPECT_EQ(t.node_of_cpu(-1), -1);
  EXPECT_EQ(t.node(2), nullptr);
  EXPECT_EQ(t.physical_cores_in(CpuSet::of({0, 1, 2})), 2);
  EXPECT_EQ(t.physical_cores_in(CpuSet::of({0, 2, 4, 8})), 4);
  expect_consistent(t);
}

TEST(TopologyTest, UniformFarApartSiblings) {
  Topology t = make_uniform_topology(2, 4, 2, /*siblings_far_apart=*/true, uint64_t{8} << 30);
  // Cores 0..7 have first threads 0..7 and second threads 8..15.
  EXPECT_EQ(t.cores[0].pus, std::vector<int>({0, 8}));
  EXPECT_EQ(t.cores[5].pus, std::vector<int>({5, 13}));
  EXPECT_EQ(t.nodes[0].cpus.to_list(), "0-3,8-11");
  EXPECT_EQ(t.nodes[1].cpus.to_list(), "4-7,12-15");
  EXPECT_EQ(t.nodes[1].total_bytes, uint64_t{8} << 30);
  EXPECT_EQ(t.core_of_cpu(13), 5);
  EXPECT_EQ(t.node_of_cpu(13), 1);
  EXPECT_EQ(t.physical_cores_in(CpuSet::of({0, 8})), 1);
  expect_consistent(t);
}

TEST(TopologyTest, SourceParsing) {
  auto none = os::TopologySource::parse("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->kind, os::TopologySource::kThisMachine);
  EXPECT_EQ(none->describe(), "this machine");
  auto syn = os::TopologySource::parse("synthetic:pack:2 core:2 pu:1");
  ASSERT_TRUE(syn.ok());
  EXPECT_EQ(syn->kind, os::TopologySource::kSynthetic);
  EXPECT_EQ(syn->spec, "pack:2 core:2 pu:1");
  auto xml = os::TopologySource::parse("xml:/tmp/x.xml");
  ASSERT_TRUE(xml.ok());
  EXPECT_EQ(xml->kind, os::TopologySource::kXmlFile);
  EXPECT_EQ(xml->spec, "/tmp/x.xml");
  EXPECT_EQ(xml->describe(), "xml:/tmp/x.xml");
  for (const char* bad : {"pack:2", "synthetic:", "xml:", "json:/x"}) {
    auto r = os::TopologySource::parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
  }
}

TEST(TopologyTest, SyntheticFourNodesSmt) {
  // 2 sockets x (2 NUMA nodes x 8 cores) x 2 threads.
  Topology t = load("synthetic:pack:2 numa:2 core:8 pu:2");
  EXPECT_EQ(t.source, "synthetic:pack:2 numa:2 core:8 pu:2");
  ASSERT_EQ(t.nodes.size(), 4u);
  ASSERT_EQ(t.cores.size(), 32u);
  EXPECT_EQ(t.all_cpus().count(), 64);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(t.nodes[n].os_index, n);
    EXPECT_EQ(t.nodes[n].cpus.count(), 16) << "node " << n;
    EXPECT_EQ(t.nodes[n].cores.size(), 8u) << "node " << n;
    EXPECT_GT(t.nodes[n].total_bytes, 0u);
  }
  // hwloc synthetic numbering is consecutive: node n owns PUs 16n..16n+15.
  EXPECT_EQ(t.nodes[2].cpus.to_list(), "32-47");
  for (const Core& c : t.cores) {
    ASSERT_EQ(c.pus.size(), 2u);
    // SMT siblings share a core (and therefore a node).
    EXPECT_EQ(t.core_of_cpu(c.pus[0]), t.core_of_cpu(c.pus[1]));
    EXPECT_EQ(c.pus[1], c.pus[0] + 1);
    EXPECT_EQ(c.package, c.numa_node / 2);
  }
  EXPECT_EQ(t.cores[17].pus, std::vector<int>({34, 35}));
  EXPECT_EQ(t.cores[17].numa_node, 2);
  EXPECT_EQ(t.cores[17].package, 1);
  EXPECT_TRUE(t.gpus.empty());
  expect_consistent(t);
}

TEST(TopologyTest, SyntheticWithoutNumaLevelHasOneNode) {
  Topology t = load("synthetic:pack:2 core:4 pu:2");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].cpus.to_list(), "0-15");
  EXPECT_EQ(t.cores.size(), 8u);
  EXPECT_EQ(t.cores[7].package, 1);
  expect_consistent(t);
}

TEST(TopologyTest, SyntheticSingleThreadCores) {
  Topology t = load("synthetic:numa:2 core:3 pu:1");
  ASSERT_EQ(t.nodes.size(), 2u);
  ASSERT_EQ(t.cores.size(), 6u);
  EXPECT_EQ(t.nodes[1].cpus.to_list(), "3-5");
  EXPECT_EQ(t.physical_cores_in(t.all_cpus()), 6);
  expect_consistent(t);
}

TEST(TopologyTest, XmlGpuAttachedToNodeOne) {
  const std::string path = kFixtures + "/two_nodes_gpu_on_node1.xml";
  Topology t = load("xml:" + path);
  EXPECT_EQ(t.source, "xml:" + path);
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].cpus.to_list(), "0-7");
  EXPECT_EQ(t.nodes[1].cpus.to_list(), "8-15");
  EXPECT_EQ(t.nodes[1].total_bytes, uint64_t{1} << 30);
  EXPECT_EQ(t.cores.size(), 8u);
  // The Intel VGA (class 0x0300) and the NIC are not GPUs; the NVIDIA 3D
  // controller below package 1 is, and node 1 is its only local node.
  ASSERT_EQ(t.gpus.size(), 1u);
  const Gpu& g = t.gpus[0];
  EXPECT_EQ(g.vendor_id, 0x10de);
  EXPECT_EQ(g.numa_node, 1);
  EXPECT_EQ(g.pci_busid, "0000:65:00.0");
  EXPECT_EQ(g.name, "GH100 [H100 SXM5 80GB]");
  expect_consistent(t);
}

TEST(TopologyTest, XmlAsymmetricNodes) {
  Topology t = load("xml:" + kFixtures + "/asymmetric_nodes.xml");
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].cpus.to_list(), "0-7");
  EXPECT_EQ(t.nodes[1].cpus.to_list(), "8-11");
  EXPECT_EQ(t.nodes[0].cores, std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(t.nodes[1].cores, std::vector<int>({4, 5}));
  EXPECT_EQ(t.nodes[0].total_bytes, uint64_t{2} << 30);
  EXPECT_EQ(t.nodes[1].total_bytes, uint64_t{1} << 30);
  ASSERT_EQ(t.cores.size(), 6u);
  EXPECT_EQ(t.cores[5].pus, std::vector<int>({10, 11}));
  EXPECT_EQ(t.node_of_cpu(12), -1);
  EXPECT_TRUE(t.gpus.empty());
  expect_consistent(t);
}

TEST(TopologyTest, BadSyntheticDescriptionIsAnError) {
  for (const char* bad : {"synthetic:bogus:3", "synthetic:pack:0 pu:2", "synthetic:pack:2 pu:x"}) {
    auto src = os::TopologySource::parse(bad);
    ASSERT_TRUE(src.ok()) << bad;
    auto t = os::load_topology(*src);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().code, MLOS_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(t.error().message.find(bad), std::string::npos) << t.error().message;
  }
}

TEST(TopologyTest, MissingXmlFileIsAnError) {
  auto src = os::TopologySource::parse("xml:" + kFixtures + "/does_not_exist.xml");
  ASSERT_TRUE(src.ok());
  auto t = os::load_topology(*src);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(t.error().message.find("does_not_exist.xml"), std::string::npos) << t.error().message;
}

TEST(TopologyTest, HandBuiltAsymmetricIndex) {
  // Node 0: cores {0,1},{2,3}; node 2 (sparse OS index): one core {9}.
  Topology t;
  t.nodes.push_back(NumaNode{0, 0, CpuSet::range(0, 3), {0, 1}});
  t.nodes.push_back(NumaNode{2, 0, CpuSet::of({9}), {2}});
  t.cores.push_back(Core{0, 0, 0, {0, 1}});
  t.cores.push_back(Core{1, 0, 0, {2, 3}});
  t.cores.push_back(Core{2, 1, 2, {9}});
  t.index();
  EXPECT_EQ(t.all_cpus().to_list(), "0-3,9");
  EXPECT_EQ(t.core_of_cpu(9), 2);
  EXPECT_EQ(t.node_of_cpu(9), 2);
  EXPECT_EQ(t.core_of_cpu(5), -1);
  EXPECT_EQ(t.node_of_cpu(5), -1);
  EXPECT_EQ(t.node(1), nullptr);
  ASSERT_NE(t.node(2), nullptr);
  EXPECT_EQ(t.node(2)->cores, std::vector<int>({2}));
  EXPECT_EQ(t.physical_cores_in(CpuSet::of({1, 2, 3, 9})), 3);
  expect_consistent(t);
}

}  // namespace
}  // namespace mlos
