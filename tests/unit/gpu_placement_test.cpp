// SPDX-License-Identifier: Apache-2.0
// GPU claims in placement (docs/gpu.md): which GPUs a request gets around
// other claims, inside its CUDA_VISIBLE_DEVICES, and that its CPUs then
// come from their NUMA node; NVML's GPUs merged into hwloc's topology.
#include "core/gpu_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/claim_ledger.h"
#include "core/placement.h"
#include "gpu/gpu_topology.h"

namespace mlos {
namespace {

using S = std::vector<std::string>;
const std::string kA = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
const std::string kB = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
const std::string kC = "GPU-cccccccc-0000-0000-0000-000000000000";
const std::string kD = "GPU-dddddddd-0000-0000-0000-000000000000";

Gpu gpu(const std::string& uuid, int index, int node) {
  Gpu g;
  g.uuid = uuid;
  g.nvml_index = index;
  g.numa_node = node;
  g.name = "NVIDIA H200";
  return g;
}

// 2 nodes x 4 cores x 1 thread (node 0 = CPUs 0-3, node 1 = 4-7); GPUs
// A, B on node 0, C, D on node 1.
Topology machine() {
  Topology t = make_uniform_topology(2, 4, 1);
  t.gpus = {gpu(kA, 0, 0), gpu(kB, 1, 0), gpu(kC, 2, 1), gpu(kD, 3, 1)};
  return t;
}

PlacementRequest with_gpus(int cpus, int gpus) {
  PlacementRequest r;
  r.num_cpus = cpus;
  r.gpus.count = gpus;
  return r;
}

int code(const Result<Placement>& r) { return r.ok() ? 0 : r.error().code; }
int code(const Result<GpuChoice>& r) { return r.ok() ? 0 : r.error().code; }

TEST(GpuPlacementTest, CpusComeFromTheNodeOfTheGpusChosen) {
  Topology t = machine();
  CpuUsage usage;
  usage.gpus.add({kA, kB}, true, +1);  // node 0's GPUs are taken
  auto p = plan_placement(t, t.all_cpus(), usage, {}, with_gpus(2, 1));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->gpus, S{kC});
  EXPECT_EQ(p->nodes, std::vector<int>{1});
  EXPECT_EQ(p->cpu_set.to_list(), "4-5");
  EXPECT_EQ(p->gpu_note, "");
}

TEST(GpuPlacementTest, AskingForSpecificGpusPlacesNearThem) {
  Topology t = machine();
  PlacementRequest r = with_gpus(1, 0);
  r.gpus.uuids = {"GPU-dddd"};  // a prefix, as CUDA takes them
  auto p = plan_placement(t, t.all_cpus(), {}, {}, r);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->gpus, S{kD});
  EXPECT_EQ(p->primary_node, 1);
}

TEST(GpuPlacementTest, ANamedNodeWinsOverTheGpusNode) {
  Topology t = machine();
  PlacementRequest r = with_gpus(1, 0);
  r.gpus.uuids = {kA};
  r.numa_preference = 1;
  auto p = plan_placement(t, t.all_cpus(), {}, {}, r);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->gpus, S{kA});
  EXPECT_EQ(p->primary_node, 1);
}

TEST(GpuPlacementTest, CpusThatDoNotFitOnTheGpusNodeSpillWithANote) {
  Topology t = machine();
  auto p = plan_placement(t, t.all_cpus(), {}, {}, with_gpus(6, 1));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->gpus, S{kA});
  EXPECT_EQ(p->cpus.size(), 6u);
  EXPECT_NE(p->gpu_note.find("CPUs not on the GPUs' NUMA node 0"), std::string::npos) << p->gpu_note;
  // Without room elsewhere either, the CPU error is the answer.
  EXPECT_EQ(code(plan_placement(t, t.all_cpus(), {}, {}, with_gpus(9, 1))), MLOS_ERR_INSUFFICIENT_CPUS);
}

TEST(GpuPlacementTest, ExclusiveClaimsNeverShareAGpu) {
  Topology t = machine();
  GpuUsage u;
  u.add({kA}, false, +1);  // A shared by one claim
  GpuRequest excl;
  excl.count = 4;
  EXPECT_EQ(code(plan_gpus(t, u, excl)), MLOS_ERR_GPUS_BUSY);
  excl.count = 3;
  auto c = plan_gpus(t, u, excl);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->uuids, (S{kC, kD, kB}));  // one node holding them all first: node 1 has 2, so spanning
  GpuRequest shared;
  shared.exclusive = false;
  shared.uuids = {kA};
  EXPECT_TRUE(plan_gpus(t, u, shared).ok());  // shared with shared
  u.add({kB}, true, +1);
  shared.uuids = {kB};
  auto busy = plan_gpus(t, u, shared);
  EXPECT_EQ(code(busy), MLOS_ERR_GPUS_BUSY);
  EXPECT_NE(busy.error().message.find("held exclusively"), std::string::npos) << busy.error().message;
  // Booking and unbooking balance.
  u.add({kB}, true, -1);
  u.add({kA}, false, -1);
  EXPECT_TRUE(u.exclusive.empty());
  EXPECT_TRUE(u.shared.empty());
}

TEST(GpuPlacementTest, SharedRequestsGoToTheLeastSharedGpuOnOneNode) {
  Topology t = machine();
  GpuUsage u;
  u.add({kA, kC}, false, +1);
  u.add({kA}, false, +1);
  GpuRequest r;
  r.count = 1;
  r.exclusive = false;
  auto c = plan_gpus(t, u, r);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->uuids, S{kB});
  r.count = 2;
  c = plan_gpus(t, u, r);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->uuids, (S{kD, kC}));  // node 1's pair carries 1 share, node 0's 2
  EXPECT_EQ(c->numa_node, 1);
}

TEST(GpuPlacementTest, CudaVisibleDevicesBoundsWhatCanBeClaimed) {
  Topology t = machine();
  EXPECT_EQ(visible_gpu_uuids(t, "3,GPU-aaaa"), (S{kD, kA}));
  EXPECT_EQ(visible_gpu_uuids(t, "1, 7, 0"), S{kB});  // CUDA stops at the first that names no GPU
  EXPECT_EQ(visible_gpu_uuids(t, ""), S{});
  EXPECT_EQ(visible_gpu_uuids(t, "GPU-"), S{});        // ambiguous prefix: no GPU
  GpuRequest r;
  r.count = 1;
  bound_by_visible_devices(r, t, "GPU-cccc");
  auto c = plan_gpus(t, {}, r);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->uuids, S{kC});
  r.count = 2;
  auto few = plan_gpus(t, {}, r);
  EXPECT_EQ(code(few), MLOS_ERR_INSUFFICIENT_GPUS);
  EXPECT_NE(few.error().message.find("this process may use 1"), std::string::npos) << few.error().message;
  GpuRequest named;
  named.uuids = {kA};
  bound_by_visible_devices(named, t, "2");
  EXPECT_EQ(code(plan_gpus(t, {}, named)), MLOS_ERR_INSUFFICIENT_GPUS);
  // An unset variable changes nothing; a second bound narrows the first.
  GpuRequest any;
  bound_by_visible_devices(any, t, nullptr);
  EXPECT_FALSE(any.within.has_value());
  bound_by_visible_devices(any, t, "0,1,2");
  bound_by_visible_devices(any, t, "2,3");
  EXPECT_EQ(*any.within, S{kC});
}

TEST(GpuPlacementTest, BadRequestsAreRefusedNamingWhatIsWrong) {
  Topology t = machine();
  GpuRequest r;
  r.count = -1;
  EXPECT_EQ(code(plan_gpus(t, {}, r)), MLOS_ERR_INVALID_ARGUMENT);
  r.count = 2;
  r.uuids = {kA};
  EXPECT_EQ(code(plan_gpus(t, {}, r)), MLOS_ERR_INVALID_ARGUMENT);
  r.count = 0;
  r.uuids = {kA, "GPU-aaaa"};
  EXPECT_EQ(code(plan_gpus(t, {}, r)), MLOS_ERR_INVALID_ARGUMENT);
  r.uuids = {"GPU-ffff"};
  auto missing = plan_gpus(t, {}, r);
  EXPECT_EQ(code(missing), MLOS_ERR_NOT_FOUND);
  EXPECT_NE(missing.error().message.find(kA), std::string::npos);  // lists what there is
  r.uuids = {"GPU-"};
  EXPECT_EQ(code(plan_gpus(t, {}, r)), MLOS_ERR_NOT_FOUND);  // matches several
  r.uuids.clear();
  r.count = 5;
  EXPECT_EQ(code(plan_gpus(t, {}, r)), MLOS_ERR_INSUFFICIENT_GPUS);
}

TEST(GpuPlacementTest, NoClaimableGpuSaysWhy) {
  Topology t = make_uniform_topology(1, 2, 1);
  Gpu amd;
  amd.name = "Radeon";
  amd.pci_busid = "0000:03:00.0";
  t.gpus = {amd};  // hwloc sees it; NVML does not
  t.gpu_note = "cannot load libnvidia-ml.so.1";
  auto p = plan_placement(t, t.all_cpus(), {}, {}, with_gpus(1, 1));
  ASSERT_EQ(code(p), MLOS_ERR_INSUFFICIENT_GPUS);
  EXPECT_NE(p.error().message.find("cannot load libnvidia-ml.so.1"), std::string::npos) << p.error().message;
  // A request without GPUs is untouched by them.
  EXPECT_TRUE(plan_placement(t, t.all_cpus(), {}, {}, with_gpus(1, 0)).ok());
}

TEST(GpuPlacementTest, LedgerClaimsCarryTheirGpusThroughJson) {
  ClaimLedger ledger;
  Claim c;
  c.owner = {100, 7};
  c.cpus.set(0);
  c.gpus = {kA, kB};
  c.gpus_exclusive = true;
  ledger.add(c);
  Claim plain;
  plain.owner = {101, 8};
  plain.cpus.set(1);
  ledger.add(plain);
  const std::string text = ledger.serialize();
  EXPECT_NE(text.find("\"schema_version\": 2"), std::string::npos) << "older libraries refuse it, keeping the GPUs";
  EXPECT_EQ(text.find("gpus", text.find("\"pid\":101")), std::string::npos);  // none: no field
  auto back = ClaimLedger::parse(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->claims[0].gpus, (S{kA, kB}));
  EXPECT_TRUE(back->claims[0].gpus_exclusive);
  EXPECT_TRUE(back->claims[1].gpus.empty());
  ClaimLedger without = *back;
  without.claims.erase(without.claims.begin());
  EXPECT_NE(without.serialize().find("\"schema_version\": 1"), std::string::npos);
  const CpuUsage u = back->usage_for({});
  EXPECT_EQ(u.gpus.exclusive, (std::set<std::string>{kA, kB}));
  auto bad = ClaimLedger::parse(R"({"schema_version":1,"next_id":2,"claims":[{"id":1,"pid":5,"start_time":1,)"
                                R"("uid":0,"cpus":"0","exclusive":false,"numa_node":0,"gpus":[3]}]})");
  EXPECT_EQ(bad.ok() ? 0 : bad.error().code, MLOS_ERR_STATE_CORRUPT);
}

gpu::GpuDevice nvml_gpu(const std::string& uuid, unsigned index, const std::string& busid, int node,
                        const std::string& affinity) {
  gpu::GpuDevice d;
  d.uuid = uuid;
  d.index = index;
  d.name = "NVIDIA H200";
  d.pci_busid = busid;
  d.numa_node = node;
  d.cpu_affinity = *CpuSet::parse_list(affinity);
  d.memory_total = 141ull << 30;
  return d;
}

TEST(GpuTopologyTest, NvmlGpusJoinHwlocsByBusIdAndGetANode) {
  Topology t = make_uniform_topology(2, 4, 1);
  Gpu seen;  // hwloc's view of the first GPU, with the node it found
  seen.pci_busid = "0000:3b:00.0";
  seen.vendor_id = 0x10de;
  seen.numa_node = 0;
  seen.name = "GH100";
  t.gpus = {seen};
  gpu::GpuInventory inv;
  inv.gpus = {nvml_gpu(kA, 0, "0000:3B:00.0", -1, "0-7"),  // sysfs says nothing; hwloc does
              nvml_gpu(kB, 1, "0000:bb:00.0", 1, "0-3"),   // sysfs's node beats the affinity
              nvml_gpu(kC, 2, "0000:cc:00.0", -1, "4-7"),  // the affinity's one node
              nvml_gpu(kD, 3, "0000:dd:00.0", -1, "2-5")}; // spans nodes: unknown
  gpu::add_nvml_gpus(t, inv);
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.gpus[0].uuid, kA);
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(t.gpus[1].numa_node, 1);
  EXPECT_EQ(t.gpus[2].numa_node, 1);
  EXPECT_EQ(t.gpus[3].numa_node, -1);
  EXPECT_EQ(t.gpus[3].nvml_index, 3);
  EXPECT_EQ(t.gpu_note, "");
  // A GPU of unknown node is still claimable, placed without a node.
  GpuRequest r;
  r.uuids = {kD};
  auto c = plan_gpus(t, {}, r);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->numa_node, -1);
}

TEST(GpuTopologyTest, AnEmptyInventoryLeavesItsReason) {
  Topology t = make_uniform_topology(1, 2, 1);
  gpu::GpuInventory inv;
  inv.absent_reason = "nvmlInit_v2: Driver Not Loaded (NVML error 9)";
  inv.skipped = {"GPU 0: nvmlDeviceGetUUID: GPU is lost (NVML error 15)"};
  gpu::add_nvml_gpus(t, inv);
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note,
            "nvmlInit_v2: Driver Not Loaded (NVML error 9); skipped: GPU 0: nvmlDeviceGetUUID: GPU is lost (NVML error 15)");
}

}  // namespace
}  // namespace mlos
