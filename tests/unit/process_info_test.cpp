// SPDX-License-Identifier: Apache-2.0
// os/process_info: the pure /proc parsers, and the readers pointed at
// fixture trees (proc_root, sys_root) built in a temp dir at test time.
#include "os/process_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace mlos::os {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// A stat line for `pid` with the given comm, state, ppid, nice, start time.
std::string stat_line(int pid, const std::string& comm, char state, int ppid, int nice, uint64_t start) {
  return std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid) +
         " 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 25 " + std::to_string(nice) + " 3 0 " +
         std::to_string(start) + " 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
}

// A fixture tree under a fresh temp dir: <root>/proc and <root>/sys.
class ProcessInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-procinfo-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string proc() const { return (root_ / "proc").string(); }
  std::string sys() const { return (root_ / "sys").string(); }
  static std::string bytes(uint64_t v) { return std::to_string(v) + "\n"; }

  fs::path root_;
};

TEST_F(ProcessInfoTest, ParseProcStatWithAwkwardComm) {
  auto s = parse_proc_stat(stat_line(1234, "my (odd) prog) x", 'S', 77, 5, 987654321));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->pid, 1234);
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 77);
  EXPECT_EQ(s->nice, 5);
  EXPECT_EQ(s->start_time, 987654321u);
  auto z = parse_proc_stat(stat_line(9, "a b c", 'Z', 1, -20, 42));
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->state, 'Z');
  EXPECT_EQ(z->nice, -20);
  EXPECT_EQ(z->start_time, 42u);
  auto empty_comm = parse_proc_stat(stat_line(3, "", 'R', 2, 0, 7));
  ASSERT_TRUE(empty_comm.ok());
  EXPECT_EQ(empty_comm->ppid, 2);
}

TEST_F(ProcessInfoTest, ParseProcStatRejectsMalformedLines) {
  EXPECT_FALSE(parse_proc_stat("").ok());
  EXPECT_FALSE(parse_proc_stat("123 no parens S 1 2 3").ok());
  EXPECT_FALSE(parse_proc_stat("123 (x) S 1 2 3 4").ok());  // short
  std::string bad_state = stat_line(1, "x", 'S', 0, 0, 1);
  bad_state.replace(bad_state.find(") S") + 2, 1, "SS");
  EXPECT_FALSE(parse_proc_stat(bad_state).ok());
  std::string bad_ppid = stat_line(1, "x", 'S', 0, 0, 1);
  bad_ppid.replace(bad_ppid.find(") S 0") + 4, 1, "zz");
  auto r = parse_proc_stat(bad_ppid);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, MLOS_ERR_SYSTEM);
}

TEST_F(ProcessInfoTest, ParsePressureTotals) {
  auto t = parse_pressure_totals(
      "some avg10=0.12 avg60=0.05 avg300=0.01 total=123456\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=789\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->some_us, 123456u);
  EXPECT_EQ(t->full_us, 789u);
  // cpu.pressure of older kernels has no full line.
  t = parse_pressure_totals("some avg10=0.00 avg60=0.00 avg300=0.00 total=5");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->some_us, 5u);
  EXPECT_EQ(t->full_us, 0u);
  EXPECT_FALSE(parse_pressure_totals(""));
  EXPECT_FALSE(parse_pressure_totals("some avg10=0.00 total=12x\n"));
  EXPECT_FALSE(parse_pressure_totals("full avg10=0.00 avg60=0.00 avg300=0.00 total=3\n"));
}

TEST_F(ProcessInfoTest, ParseMeminfoField) {
  const std::string meminfo =
      "MemTotal:       16318412 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:   12000000 kB\n"
      "Active(anon):     111111 kB\n"
      "Active:           222222 kB\n"
      "HugePages_Total:      16\n"
      "Hugepagesize:       2048 kB";  // last line without newline
  EXPECT_EQ(parse_meminfo_field(meminfo, "MemAvailable"), uint64_t{12000000} * 1024);
  EXPECT_EQ(parse_meminfo_field(meminfo, "MemFree"), uint64_t{1000000} * 1024);
  EXPECT_EQ(parse_meminfo_field(meminfo, "Active"), uint64_t{222222} * 1024);
  // /proc/<pid>/status separates with tabs.
  EXPECT_EQ(parse_meminfo_field("VmRSS:\t    2048 kB\nRssAnon:\t    1024 kB\n", "RssAnon"), uint64_t{1024} * 1024);
  EXPECT_EQ(parse_meminfo_field(meminfo, "Active(anon)"), uint64_t{111111} * 1024);
  EXPECT_EQ(parse_meminfo_field(meminfo, "HugePages_Total"), uint64_t{16});  // no unit
  EXPECT_EQ(parse_meminfo_field(meminfo, "Hugepagesize"), uint64_t{2048} * 1024);
  EXPECT_EQ(parse_meminfo_field(meminfo, "Free"), std::nullopt);  // not a suffix match
  EXPECT_EQ(parse_meminfo_field(meminfo, "Mem"), std::nullopt);
  EXPECT_EQ(parse_meminfo_field(meminfo, "SwapTotal"), std::nullopt);
  EXPECT_EQ(parse_meminfo_field("", "MemFree"), std::nullopt);

  const std::string node =
      "Node 1 MemTotal:       32768000 kB\n"
      "Node 1 MemFree:         2097152 kB\n"
      "Node 1 MemUsed:        30670848 kB\n"
      "Node 1 FilePages:        524288 kB\n";
  EXPECT_EQ(parse_meminfo_field(node, "MemFree"), 2 * kGiB);
  EXPECT_EQ(parse_meminfo_field(node, "FilePages"), 512 * kMiB);
  EXPECT_EQ(parse_meminfo_field(node, "MemAvailable"), std::nullopt);
}

TEST_F(ProcessInfoTest, ParseCgroupPath) {
  const std::string v1 =
      "12:memory:/user.slice/job\n"
      "4:cpu,cpuacct:/mygroup\n"
      "3:cpuset:/\n"
      "1:name=systemd:/user.slice/session-1.scope\n"
      "0::/user.slice/user-1000.slice\n";
  EXPECT_EQ(parse_cgroup_path(v1, "memory"), "/user.slice/job");
  EXPECT_EQ(parse_cgroup_path(v1, "cpu"), "/mygroup");
  EXPECT_EQ(parse_cgroup_path(v1, "cpuacct"), "/mygroup");
  EXPECT_EQ(parse_cgroup_path(v1, "cpuset"), "/");
  EXPECT_EQ(parse_cgroup_path(v1, "name=systemd"), "/user.slice/session-1.scope");
  EXPECT_EQ(parse_cgroup_path(v1, ""), "/user.slice/user-1000.slice");
  EXPECT_EQ(parse_cgroup_path(v1, "cpu,cpuacct"), std::nullopt);
  EXPECT_EQ(parse_cgroup_path(v1, "acct"), std::nullopt);
  EXPECT_EQ(parse_cgroup_path(v1, "blkio"), std::nullopt);

  const std::string v2 = "0::/system.slice/a:b.service\n";
  EXPECT_EQ(parse_cgroup_path(v2, ""), "/system.slice/a:b.service");
  EXPECT_EQ(parse_cgroup_path(v2, "memory"), std::nullopt);
  EXPECT_EQ(parse_cgroup_path("", ""), std::nullopt);
  EXPECT_EQ(parse_cgroup_path("garbage\n", "memory"), std::nullopt);
}

TEST_F(ProcessInfoTest, CgroupV1HeadroomIsMinOverAncestors) {
  const Topology topo = make_uniform_topology(2, 2, 1);
  write("proc/meminfo", "MemTotal: 16777216 kB\nMemAvailable:    8388608 kB\n");  // 8 GiB
  write("proc/self/cgroup", "5:memory:/jobs/train\n4:cpu,cpuacct:/x\n0::/\n");
  const std::string cg = "sys/fs/cgroup/memory";
  // Root: v1 "unlimited" (a huge page-aligned number) is not a limit.
  write(cg + "/memory.limit_in_bytes", "9223372036854771712\n");
  write(cg + "/memory.usage_in_bytes", bytes(10 * kGiB));
  write(cg + "/jobs/memory.limit_in_bytes", bytes(2 * kGiB));  // headroom 512 MiB
  write(cg + "/jobs/memory.usage_in_bytes", bytes(1536 * kMiB));
  write(cg + "/jobs/train/memory.limit_in_bytes", bytes(4 * kGiB));  // headroom 3 GiB
  write(cg + "/jobs/train/memory.usage_in_bytes", bytes(1 * kGiB));
  write("sys/devices/system/node/node0/meminfo",
        "Node 0 MemTotal: 8388608 kB\nNode 0 MemFree:  1048576 kB\nNode 0 FilePages: 524288 kB\n");
  MemoryAvailability m = read_memory_availability(topo, proc(), sys());
  EXPECT_EQ(m.available_bytes, 512 * kMiB);
  // Node 0: MemFree + FilePages; node 1 has no meminfo: unknown.
  EXPECT_EQ(m.node_free_bytes, (std::map<int, uint64_t>{{0, 1536 * kMiB}}));

  // The parent loosens: the leaf's own 3 GiB is now the tightest.
  write(cg + "/jobs/memory.limit_in_bytes", bytes(64 * kGiB));
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 3 * kGiB);
  // Over its limit: no headroom at all.
  write(cg + "/jobs/train/memory.usage_in_bytes", bytes(5 * kGiB));
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 0u);
  // No limit anywhere: MemAvailable.
  write(cg + "/jobs/train/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 8 * kGiB);
  // A cgroup tighter than MemAvailable is found even at the v1 root level.
  write(cg + "/memory.limit_in_bytes", bytes(12 * kGiB));  // 12 - 10 = 2 GiB
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 2 * kGiB);
}

TEST_F(ProcessInfoTest, CgroupV2HeadroomWithMaxAsUnlimited) {
  const Topology topo = make_uniform_topology(2, 2, 1);
  write("proc/meminfo", "MemAvailable:    8388608 kB\n");
  write("proc/self/cgroup", "0::/user.slice/job.scope\n");
  const std::string cg = "sys/fs/cgroup";
  write(cg + "/user.slice/job.scope/memory.max", "max\n");
  write(cg + "/user.slice/job.scope/memory.current", bytes(100 * kMiB));
  write(cg + "/user.slice/memory.max", bytes(3 * kGiB));
  write(cg + "/user.slice/memory.current", bytes(1 * kGiB));
  write("sys/devices/system/node/node0/meminfo", "Node 0 MemFree: 1048576 kB\n");
  write("sys/devices/system/node/node1/meminfo", "Node 1 MemFree: 2097152 kB\nNode 1 FilePages: 0 kB\n");
  MemoryAvailability m = read_memory_availability(topo, proc(), sys());
  EXPECT_EQ(m.available_bytes, 2 * kGiB);
  EXPECT_EQ(m.node_free_bytes, (std::map<int, uint64_t>{{0, 1 * kGiB}, {1, 2 * kGiB}}));

  write(cg + "/user.slice/job.scope/memory.max", bytes(1 * kGiB));  // 1 GiB - 100 MiB
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 924 * kMiB);
  write(cg + "/user.slice/job.scope/memory.max", "max\n");
  write(cg + "/user.slice/memory.max", "max\n");
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 8 * kGiB);
  // No /proc/meminfo at all: the cgroup headroom alone.
  fs::remove(root_ / "proc/meminfo");
  write(cg + "/user.slice/memory.max", bytes(5 * kGiB));
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, 4 * kGiB);
}

TEST_F(ProcessInfoTest, NothingReadableMeansUnknown) {
  const Topology topo = make_uniform_topology(1, 1, 1);
  fs::create_directories(root_ / "proc");
  MemoryAvailability m = read_memory_availability(topo, proc(), sys());
  EXPECT_EQ(m.available_bytes, UINT64_MAX);
  EXPECT_TRUE(m.node_free_bytes.empty());
  // An unreadable limit value is ignored rather than trusted.
  write("proc/self/cgroup", "0::/a\n");
  write("sys/fs/cgroup/a/memory.max", "lots\n");
  write("sys/fs/cgroup/a/memory.current", "1\n");
  EXPECT_EQ(read_memory_availability(topo, proc(), sys()).available_bytes, UINT64_MAX);
}

TEST_F(ProcessInfoTest, ProcessIdentityAndLineageFromProcRoot) {
  write("proc/1/stat", stat_line(1, "init", 'S', 0, 0, 1));
  write("proc/50/stat", stat_line(50, "mlos run", 'S', 1, 0, 5000));
  write("proc/60/stat", stat_line(60, "python (train)", 'R', 50, 0, 6000));
  write("proc/70/stat", stat_line(70, "zombie", 'Z', 50, 0, 7000));

  auto id = process_id(60, proc());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, (ProcessId{60, 6000}));
  auto gone = process_id(61, proc());
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, MLOS_ERR_NO_SUCH_THREAD);

  EXPECT_TRUE(is_alive(ProcessId{60, 6000}, proc()));
  EXPECT_FALSE(is_alive(ProcessId{60, 5999}, proc()));  // pid reused
  EXPECT_FALSE(is_alive(ProcessId{61, 6000}, proc()));  // gone
  EXPECT_FALSE(is_alive(ProcessId{70, 7000}, proc()));  // zombie

  EXPECT_EQ(lineage(60, proc()), (std::vector<ProcessId>{{60, 6000}, {50, 5000}, {1, 1}}));
  EXPECT_EQ(lineage(1, proc()), (std::vector<ProcessId>{{1, 1}}));
  EXPECT_TRUE(lineage(61, proc()).empty());
}

TEST_F(ProcessInfoTest, ThisProcessIsAliveInRealProc) {
  auto me = process_id(getpid());
  ASSERT_TRUE(me.ok());
  EXPECT_EQ(me->pid, getpid());
  EXPECT_GT(me->start_time, 0u);
  EXPECT_TRUE(is_alive(*me));
  EXPECT_FALSE(is_alive(ProcessId{me->pid, me->start_time + 1}));
  auto chain = lineage(getpid());
  ASSERT_GE(chain.size(), 2u);
  EXPECT_EQ(chain[0], *me);
  EXPECT_EQ(chain[1].pid, getppid());
}

TEST(ProcessInfo, TheFileMappedAtAnAddressComesFromItsMapsLine) {
  const std::string maps =
      "55d0c0a00000-55d0c0a21000 r--p 00000000 fe:01 1311 /usr/bin/python3.11\n"
      "7f00aa000000-7f00aa200000 r-xp 00010000 fe:01 4242 /opt/my install/lib/libmlos.so.0.1.0\n"
      "7f00ab000000-7f00ab001000 rw-p 00000000 00:00 0 \n"
      "7f00ac000000-7f00ac001000 r-xp 00000000 00:05 77 /tmp/gone.so (deleted)\n"
      "7ffc1000-7ffc2000 rw-p 00000000 00:00 0                          [stack]\n";
  EXPECT_EQ(parse_maps_file_at(maps, 0x55d0c0a00000), "/usr/bin/python3.11");
  // A path with a space; the last byte of a mapping is inside it, its end is not.
  EXPECT_EQ(parse_maps_file_at(maps, 0x7f00aa1fffff), "/opt/my install/lib/libmlos.so.0.1.0");
  EXPECT_EQ(parse_maps_file_at(maps, 0x7f00aa200000), std::nullopt);
  EXPECT_EQ(parse_maps_file_at(maps, 0x7f00ab000010), std::nullopt);  // anonymous
  EXPECT_EQ(parse_maps_file_at(maps, 0x7f00ac000010), std::nullopt);  // deleted
  EXPECT_EQ(parse_maps_file_at(maps, 0x7ffc1800), std::nullopt);      // [stack]
  EXPECT_EQ(parse_maps_file_at("garbage\n-\nzz-1 r\n", 5), std::nullopt);
  EXPECT_EQ(parse_maps_file_at("", 5), std::nullopt);
}

}  // namespace
}  // namespace mlos::os
