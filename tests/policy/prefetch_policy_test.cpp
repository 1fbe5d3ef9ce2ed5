// SPDX-License-Identifier: Apache-2.0
// The shipped `prefetch` policy in a real host: reads reach it through the
// read log, it fetches what it learned and what the job announced, it
// refuses a job without a read log and an unknown key, and it stops under
// critical memory pressure. The last test checks the effect on the real
// kernel: files the job is about to read become resident in the page cache
// (mincore), through the embedded engine that applies the fetches.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/embedded_policies.h"
#include "policy_test_support.h"

namespace mlos::policy::testing {
namespace {

using nlohmann::json;

std::vector<std::string> fetched(const Owner& o, uint64_t job) {
  std::vector<std::string> out;
  for (const auto& a : o.applied) {
    if (a.policy == "prefetch" && a.action.job == job && a.action.kind == ActionKind::kFileAdvice) {
      EXPECT_EQ(a.action.value, static_cast<uint64_t>(MLOS_POLICY_FILE_WILLNEED));
      out.push_back(a.action.path);
    }
  }
  return out;
}

std::string file(int i) { return "/data/f" + std::to_string(i); }

TEST(PrefetchPolicyTest, FetchesWhatTheReadLogTaughtIt) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1);
  auto log = h.owner().read_logs[1] = std::make_shared<ReadLog>();
  ASSERT_TRUE(h.hosts().attach("prefetch", 1, json::object()).ok());
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int i = 0; i < 5; ++i) log->record(FileRead{file(i), 0, 4096});
  }
  log->record(FileRead{file(0), 0, 4096});
  ASSERT_TRUE(h.tick_once("prefetch"));
  EXPECT_EQ(fetched(h.owner(), 1), (std::vector<std::string>{file(1), file(2), file(3), file(4)}));
  for (const auto& a : h.owner().applied) EXPECT_EQ(a.action.length, 4096u);
}

TEST(PrefetchPolicyTest, FetchesTheAnnouncedPlanAheadOfTheReader) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1);
  auto log = h.owner().read_logs[1] = std::make_shared<ReadLog>();
  ASSERT_TRUE(h.hosts().attach("prefetch", 1, json{{"learn", false}, {"ahead_mb", 3}}).ok());
  log->announce({file(0), file(1), file(2), file(3), file(4), file(5)});
  log->record(FileRead{file(0), 0, 0});
  ASSERT_TRUE(h.tick_once("prefetch"));
  // The files do not exist (size -1): each counts as one 1 MiB block.
  EXPECT_EQ(fetched(h.owner(), 1), (std::vector<std::string>{file(1), file(2), file(3)}));
}

TEST(PrefetchPolicyTest, CriticalMemoryPressureStopsFetching) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1);
  h.owner().figures[1].memory_pressure_level = MLOS_MEMORY_PRESSURE_CRITICAL;
  auto log = h.owner().read_logs[1] = std::make_shared<ReadLog>();
  ASSERT_TRUE(h.hosts().attach("prefetch", 1, json::object()).ok());
  log->announce({file(0), file(1), file(2)});
  log->record(FileRead{file(0), 0, 0});
  ASSERT_TRUE(h.tick_once("prefetch"));
  EXPECT_TRUE(fetched(h.owner(), 1).empty());
  h.owner().figures[1].memory_pressure_level = MLOS_MEMORY_PRESSURE_NORMAL;
  ASSERT_TRUE(h.tick_once("prefetch"));
  EXPECT_EQ(fetched(h.owner(), 1).size(), 2u);
}

TEST(PrefetchPolicyTest, ManyJobsWithFullLogsShareATicksBoundsAndLoseNothing) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  const std::string dir = "/data/" + std::string(200, 'd') + "/";
  constexpr int kJobs = 4, kReads = 2000;
  for (uint64_t job = 1; job <= kJobs; ++job) {
    h.owner().add_job(job);
    h.owner().read_logs[job] = std::make_shared<ReadLog>();
    ASSERT_TRUE(h.hosts().attach("prefetch", job, json{{"learn", false}}).ok());
    for (int i = 0; i < kReads; ++i) h.owner().read_logs[job]->record(FileRead{dir + std::to_string(i), 0, 1});
  }
  // Each tick carries a quarter of the frame's bounds per job; 2000 reads
  // of 200-byte paths take dozens of ticks, none of them too large.
  for (int t = 0; t < 200; ++t) ASSERT_TRUE(h.tick_once("prefetch"));
  EXPECT_EQ(h.status_of("prefetch")["failures"], 0) << h.status_of("prefetch").dump();
  for (uint64_t job = 1; job <= kJobs; ++job) {
    ASSERT_TRUE(h.hosts().detach("prefetch", job).ok());
    const std::string summary = "job " + std::to_string(job) + ": " + std::to_string(kReads) + " reads";
    EXPECT_TRUE(h.poll_until([&] { return h.owner().logged(summary); })) << summary;
  }
}

TEST(PrefetchPolicyTest, RefusesAJobWithoutAReadLogAndUnknownKeys) {
  Harness h(test_options(MLOS_SHIPPED_POLICY_DIR));
  h.owner().add_job(1);
  h.owner().add_job(2);
  h.owner().read_logs[2] = std::make_shared<ReadLog>();
  Status none = h.hosts().attach("prefetch", 1, json::object());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(none.error().message.find("read log"), std::string::npos) << none.error().message;
  Status bad = h.hosts().attach("prefetch", 2, json{{"ahead", 3}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.error().message.find("\"ahead\""), std::string::npos) << bad.error().message;
  Status range = h.hosts().attach("prefetch", 2, json{{"ahead_mb", 0}});
  EXPECT_EQ(range.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(h.hosts().attach("prefetch", 2, json{{"ahead_mb", 8}, {"learn", true}}).ok());
}

// Resident pages of `path` / its pages (mincore on a read-only mapping).
double resident_share(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st{};
  fstat(fd, &st);
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  const long page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> vec((static_cast<size_t>(st.st_size) + page - 1) / page);
  mincore(map, static_cast<size_t>(st.st_size), vec.data());
  munmap(map, static_cast<size_t>(st.st_size));
  size_t in = 0;
  for (unsigned char v : vec) in += v & 1;
  return static_cast<double>(in) / static_cast<double>(vec.size());
}

void evict(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

TEST(PrefetchPolicyTest, FilesTheJobWillReadBecomeResidentInThePageCache) {
  // On the disk, not tmpfs: tmpfs pages cannot be evicted to show a fetch.
  char dir[] = "/var/tmp/mlos-prefetch-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::vector<std::string> files;
  const std::string block(256 * 1024, 'p');
  for (int i = 0; i < 6; ++i) {
    files.push_back(std::string(dir) + "/f" + std::to_string(i));
    const int fd = open(files.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
    fsync(fd);
    close(fd);
  }
  for (const auto& f : files) evict(f);
  if (resident_share(files[3]) > 0.5) GTEST_SKIP() << "this file system keeps evicted pages resident";

  EmbeddedPolicies::Options o;
  o.hosts = test_options(MLOS_SHIPPED_POLICY_DIR);
  EmbeddedPolicies service(o);
  EmbeddedPolicies::JobGrant grant;
  grant.cpus = *CpuSet::parse_list("0");
  auto reads = std::make_shared<ReadLog>();
  ASSERT_TRUE(service.add_job(21, grant, EmbeddedPolicies::make_phase_sink(1), reads).ok());
  ASSERT_TRUE(service.request(21, "prefetch", json::object()).ok());
  // Two passes in one order teach the model; then every file is evicted
  // and the job reads the first: the policy fetches the rest.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& f : files) reads->record(FileRead{f, 0, 0});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the learning passes' fetches land
  for (const auto& f : files) evict(f);
  reads->record(FileRead{files[0], 0, 0});
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool resident = false;
  while (!resident && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    resident = resident_share(files[1]) == 1.0 && resident_share(files[5]) == 1.0;
  }
  EXPECT_TRUE(resident) << "f1 " << resident_share(files[1]) << ", f5 " << resident_share(files[5]);
  service.remove_job(21);
  for (const auto& f : files) unlink(f.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace mlos::policy::testing
