// SPDX-License-Identifier: Apache-2.0
// The GPU manager's view of the machine, read through the real dlopen path
// from fake NVML libraries (fake_nvml.cpp) serving GPUs described in JSON,
// with a fixture sysfs tree: what is read, what is unknown and why, and
// that no failure of NVML is ever a crash or a made-up figure.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu/gpu_inventory.h"
#include "gpu/nvml_library.h"

namespace mlos::gpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class GpuInventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mlos-gpu-test-" + std::to_string(getpid()));
    fs::create_directories(dir_ / "sysfs");
    setenv("MLOS_NVML_LIBRARY", MLOS_FAKE_NVML_LIBRARY, 1);
    setenv("MLOS_FAKE_NVML", (dir_ / "nvml.json").c_str(), 1);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    unsetenv("MLOS_NVML_LIBRARY");
    unsetenv("MLOS_FAKE_NVML");
  }

  void serve(const json& config) { std::ofstream(dir_ / "nvml.json") << config.dump(); }
  // The kernel's view of one PCI device.
  void sysfs_device(const std::string& busid, const std::string& numa_node, const std::string& cpulist) {
    fs::create_directories(dir_ / "sysfs" / busid);
    std::ofstream(dir_ / "sysfs" / busid / "numa_node") << numa_node << "\n";
    std::ofstream(dir_ / "sysfs" / busid / "local_cpulist") << cpulist << "\n";
  }
  std::string sysfs() const { return (dir_ / "sysfs").string(); }

  static json h200(const std::string& uuid, unsigned bus, const std::string& cpus) {
    return {{"uuid", uuid},
            {"name", "NVIDIA H200"},
            {"memory_total", 150754820096ULL},
            {"memory_used", 1073741824ULL},
            {"pci", {{"domain", 0}, {"bus", bus}, {"device", 0}}},
            {"cpu_affinity", cpus},
            {"mig", 0},
            {"utilization", {37, 12}},
            {"power_mw", 251000},
            {"temperature", 41},
            {"clock_event_reasons", 1},
            {"processes", {{{"pid", 4242}, {"used", 536870912ULL}}, {{"pid", 4343}, {"used", nullptr}}}}};
  }

  fs::path dir_;
};

bool has_note(const GpuDevice& g, const std::string& text) {
  for (const auto& n : g.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_F(GpuInventoryTest, EveryFigureOfEveryGpuWithItsNumaNodeFromSysfs) {
  serve({{"driver_version", "550.54.15"},
         {"gpus", {h200("GPU-aaaaaaaa-0000-0000-0000-000000000001", 0x3b, "0-15"),
                   h200("GPU-aaaaaaaa-0000-0000-0000-000000000002", 0xd8, "16-31")}}});
  sysfs_device("0000:3b:00.0", "0", "0-15");
  sysfs_device("0000:d8:00.0", "1", "16-31");
  const GpuInventory inv = discover_gpus(sysfs());
  ASSERT_EQ(inv.gpus.size(), 2u) << inv.absent_reason;
  EXPECT_EQ(inv.absent_reason, "");
  EXPECT_EQ(inv.driver_version, "550.54.15");
  EXPECT_EQ(inv.nvml_library, MLOS_FAKE_NVML_LIBRARY);
  const GpuDevice& a = inv.gpus[0];
  EXPECT_EQ(a.index, 0u);
  EXPECT_EQ(a.uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000001");
  EXPECT_EQ(a.name, "NVIDIA H200");
  EXPECT_EQ(a.pci_busid, "0000:3b:00.0") << "the kernel's form, not NVML's 00000000:3B:00.0";
  EXPECT_EQ(a.memory_total, 150754820096ULL);
  EXPECT_EQ(a.memory_used, 1073741824ULL);
  EXPECT_EQ(a.memory_free, 150754820096ULL - 1073741824ULL);
  EXPECT_EQ(a.numa_node, 0);
  EXPECT_EQ(a.cpu_affinity.to_list(), "0-15");
  EXPECT_EQ(a.mig_enabled, std::optional<bool>(false));
  EXPECT_EQ(a.utilization_percent, std::optional<unsigned>(37));
  EXPECT_EQ(a.memory_utilization_percent, std::optional<unsigned>(12));
  EXPECT_EQ(a.power_milliwatts, std::optional<unsigned>(251000));
  EXPECT_EQ(a.temperature_celsius, std::optional<unsigned>(41));
  EXPECT_EQ(a.clock_event_reasons, std::optional<uint64_t>(1));
  ASSERT_TRUE(a.processes.has_value());
  ASSERT_EQ(a.processes->size(), 2u);
  EXPECT_EQ((*a.processes)[0].pid, 4242u);
  EXPECT_EQ((*a.processes)[0].used_bytes, std::optional<uint64_t>(536870912ULL));
  EXPECT_EQ((*a.processes)[1].used_bytes, std::nullopt) << "NVML_VALUE_NOT_AVAILABLE is unknown, not 2^64-1";
  EXPECT_FALSE(a.memory_numa_node.has_value()) << "GPU memory is no NUMA node here";
  EXPECT_TRUE(a.notes.empty()) << a.notes.front();
  EXPECT_EQ(inv.gpus[1].numa_node, 1);
  EXPECT_EQ(inv.gpus[1].cpu_affinity.to_list(), "16-31");
}

TEST_F(GpuInventoryTest, FiguresWithoutLocalityReadNoSysfsAndGiveEachProcesssShare) {
  json gpu = h200("GPU-c", 0x3b, "0-15");
  gpu["process_utilization"] = {{{"pid", 4242}, {"sm", 35}}, {{"pid", 77}, {"sm", 5}}};
  serve({{"gpus", {gpu}}});
  sysfs_device("0000:3b:00.0", "0", "0-15");
  auto lib = NvmlLibrary::open();
  ASSERT_TRUE(lib) << lib.error().describe();
  const GpuInventory inv = read_gpu_inventory(**lib, sysfs(), /*locality=*/false);
  ASSERT_EQ(inv.gpus.size(), 1u);
  EXPECT_EQ(inv.gpus[0].numa_node, -1) << "not read: what mlosd's metrics updates skip";
  EXPECT_TRUE(inv.gpus[0].cpu_affinity.empty());
  EXPECT_EQ(inv.gpus[0].utilization_percent, std::optional<unsigned>(37));
  ASSERT_TRUE(inv.gpus[0].process_sm_percent.has_value());
  EXPECT_EQ(*inv.gpus[0].process_sm_percent, (std::map<uint32_t, double>{{77, 5}, {4242, 35}}));
}

TEST_F(GpuInventoryTest, FiguresNvmlRefusesAreUnknownWithTheReasonAndTheGpuStays) {
  json gpu = h200("GPU-b", 0x3b, "0-15");
  gpu["errors"] = {{"nvmlDeviceGetPowerUsage", 4},                 // NO_PERMISSION
                   {"nvmlDeviceGetUtilizationRates", 15},          // GPU_IS_LOST
                   {"nvmlDeviceGetComputeRunningProcesses_v3", 4}};
  gpu.erase("temperature");  // NOT_SUPPORTED
  serve({{"gpus", {gpu}}});
  const GpuInventory inv = discover_gpus(sysfs());  // no sysfs entry for it
  ASSERT_EQ(inv.gpus.size(), 1u);
  const GpuDevice& g = inv.gpus[0];
  EXPECT_FALSE(g.power_milliwatts.has_value());
  EXPECT_FALSE(g.utilization_percent.has_value());
  EXPECT_FALSE(g.temperature_celsius.has_value());
  EXPECT_FALSE(g.processes.has_value()) << "unknown, not an empty list";
  EXPECT_TRUE(has_note(g, "power: nvmlDeviceGetPowerUsage: Insufficient Permissions (NVML error 4)"));
  EXPECT_TRUE(has_note(g, "utilization: nvmlDeviceGetUtilizationRates: GPU is lost (NVML error 15)"));
  EXPECT_TRUE(has_note(g, "temperature: nvmlDeviceGetTemperature: Not Supported"));
  EXPECT_TRUE(has_note(g, "processes: nvmlDeviceGetComputeRunningProcesses: Insufficient Permissions"));
  EXPECT_EQ(g.numa_node, -1) << "no sysfs numa_node: unknown";
  EXPECT_TRUE(has_note(g, "numa_node: "));
  EXPECT_EQ(g.cpu_affinity.to_list(), "0-15") << "NVML's affinity stands without sysfs";
}

TEST_F(GpuInventoryTest, AGpuWithoutItsIdentityIsSkippedNamingWhy) {
  json broken = h200("GPU-c", 0x3b, "0-15");
  broken["errors"] = {{"nvmlDeviceGetUUID", 15}};
  serve({{"gpus", {broken, h200("GPU-d", 0xd8, "16-31")}}});
  const GpuInventory inv = discover_gpus(sysfs());
  ASSERT_EQ(inv.gpus.size(), 1u);
  EXPECT_EQ(inv.gpus[0].uuid, "GPU-d");
  EXPECT_EQ(inv.gpus[0].index, 1u) << "NVML's index, not the position in the list";
  ASSERT_EQ(inv.skipped.size(), 1u);
  EXPECT_EQ(inv.skipped[0], "GPU 0: nvmlDeviceGetUUID: GPU is lost (NVML error 15)");
}

TEST_F(GpuInventoryTest, SysfsAndNvmlDisagreeingIsNotedAndSysfsFillsAMissingAffinity) {
  json a = h200("GPU-e", 0x3b, "0-7");
  json b = h200("GPU-f", 0xd8, "");
  b.erase("cpu_affinity");  // NVML: NOT_SUPPORTED
  serve({{"gpus", {a, b}}});
  sysfs_device("0000:3b:00.0", "-1", "0-15");
  sysfs_device("0000:d8:00.0", "1", "16-31");
  const GpuInventory inv = discover_gpus(sysfs());
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].numa_node, -1) << "the kernel's -1 is unknown";
  EXPECT_EQ(inv.gpus[0].cpu_affinity.to_list(), "0-7");
  EXPECT_TRUE(has_note(inv.gpus[0], "NVML's CPU affinity 0-7 differs from sysfs local_cpulist 0-15"));
  EXPECT_EQ(inv.gpus[1].cpu_affinity.to_list(), "16-31");
  EXPECT_TRUE(has_note(inv.gpus[1], "cpu_affinity: nvmlDeviceGetCpuAffinity: Not Supported"));
}

TEST_F(GpuInventoryTest, GpuMemoryAsANumaNodeAndMigAreRead) {
  json g = h200("GPU-gh", 0x1, "0-71");
  g["numa_node_id"] = 4;
  g["mig"] = 1;
  serve({{"gpus", {g}}});
  const GpuInventory inv = discover_gpus(sysfs());
  ASSERT_EQ(inv.gpus.size(), 1u);
  EXPECT_EQ(inv.gpus[0].memory_numa_node, std::optional<int>(4));
  EXPECT_EQ(inv.gpus[0].mig_enabled, std::optional<bool>(true));
}

TEST_F(GpuInventoryTest, AnOldDriversNvmlFallsBackToTheOlderFunctions) {
  setenv("MLOS_NVML_LIBRARY", MLOS_FAKE_NVML_OLD_LIBRARY, 1);
  serve({{"gpus", {h200("GPU-old", 0x3b, "0-15")}}});
  const GpuInventory inv = discover_gpus(sysfs());
  ASSERT_EQ(inv.gpus.size(), 1u) << inv.absent_reason;
  const GpuDevice& g = inv.gpus[0];
  EXPECT_EQ(g.clock_event_reasons, std::optional<uint64_t>(1)) << "from ...ClocksThrottleReasons";
  ASSERT_TRUE(g.processes.has_value()) << "from ..._v2";
  EXPECT_EQ(g.processes->size(), 2u);
  EXPECT_FALSE(g.mig_enabled.has_value());
  EXPECT_TRUE(has_note(g, "mig: this NVML lacks nvmlDeviceGetMigMode"));
}

TEST_F(GpuInventoryTest, WithoutNvmlThereAreNoGpusAndTheReason) {
  setenv("MLOS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  GpuInventory inv = discover_gpus(sysfs());
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_NE(inv.absent_reason.find("NVML could not be loaded (/nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << inv.absent_reason;

  // A library that is not NVML.
  setenv("MLOS_NVML_LIBRARY", "libm.so.6", 1);
  inv = discover_gpus(sysfs());
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_NE(inv.absent_reason.find("lacks nvmlInit_v2"), std::string::npos) << inv.absent_reason;
}

TEST_F(GpuInventoryTest, ADriverThatIsNotLoadedOrListsNoGpusIsNoGpus) {
  serve({{"init_error", 9}});
  auto lib = NvmlLibrary::open();
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(lib.error().message.find("nvmlInit_v2: Driver Not Loaded (NVML error 9)"), std::string::npos)
      << lib.error().message;

  serve({{"driver_version", "535.104.05"}, {"gpus", json::array()}});
  const GpuInventory inv = discover_gpus(sysfs());
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_EQ(inv.absent_reason, "NVML (driver 535.104.05) lists no GPUs");
}

}  // namespace
}  // namespace mlos::gpu
