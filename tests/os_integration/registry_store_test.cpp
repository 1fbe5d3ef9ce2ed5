// SPDX-License-Identifier: Apache-2.0
// mlosd's registry on real files: a change costs one journal line whatever
// the number of jobs, a torn last line is dropped, a damaged one refused
// with the files untouched, and a compaction interrupted between its two
// steps loses nothing.
#include "daemon/registry_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace mlos::daemon {
namespace {

namespace fs = std::filesystem;

JobRecord record(uint64_t id) {
  JobRecord r;
  r.id = id;
  r.owner = ProcessId{static_cast<int>(1000 + id), 77};
  r.uid = 1000;
  r.cpus = *CpuSet::parse_list("0-1");
  r.mems = *CpuSet::parse_list("0");
  r.label = "job-" + std::to_string(id);
  return r;
}

class RegistryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-registry-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string bytes(const std::string& path) const {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::vector<uint64_t> ids_on_disk() {
    auto loaded = RegistryStore(dir_).load();
    EXPECT_TRUE(loaded.ok()) << loaded.error().describe();
    std::vector<uint64_t> ids;
    if (loaded.ok() && loaded->has_value()) {
      for (const auto& r : (*loaded)->jobs) ids.push_back(r.id);
    }
    return ids;
  }

  std::string dir_;
};

TEST_F(RegistryStoreTest, ChangesAreDurableAndReadBackInOrder) {
  RegistryStore store(dir_);
  ASSERT_FALSE(store.load()->has_value());
  ASSERT_TRUE(store.put(record(1), 2));
  ASSERT_TRUE(store.put(record(2), 3));
  ASSERT_TRUE(store.remove({1}));
  JobRecord changed = record(2);
  changed.memory_event_fd = 9;
  ASSERT_TRUE(store.put(changed, 3));
  auto loaded = RegistryStore(dir_).load();
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  ASSERT_EQ((*loaded)->jobs.size(), 1u);
  EXPECT_EQ((*loaded)->jobs[0].id, 2u);
  EXPECT_EQ((*loaded)->jobs[0].memory_event_fd, 9);
  EXPECT_EQ((*loaded)->next_id, 3u);
  EXPECT_FALSE(fs::exists(store.path())) << "no snapshot was needed yet";
}

TEST_F(RegistryStoreTest, AChangeCostsTheSameWhateverTheNumberOfJobs) {
  RegistryStore store(dir_);
  ASSERT_TRUE(store.put(record(1), 2));
  const auto first = fs::file_size(store.journal_path());
  for (uint64_t id = 2; id < 2000; ++id) ASSERT_TRUE(store.put(record(id), id + 1));
  const auto before = fs::file_size(store.journal_path());
  ASSERT_TRUE(store.put(record(2000), 2001));
  const auto added = fs::file_size(store.journal_path()) - before;
  // The same record shape, 4 more digits at most: one line, not 2000 jobs.
  EXPECT_LE(added, first + 16);
  EXPECT_EQ(ids_on_disk().size(), 2000u);
}

TEST_F(RegistryStoreTest, ATornLastLineIsDroppedAndOverwritten) {
  {
    RegistryStore store(dir_);
    ASSERT_TRUE(store.put(record(1), 2));
    ASSERT_TRUE(store.put(record(2), 3));
  }
  const std::string journal = dir_ + "/registry.journal";
  const std::string whole = bytes(journal);
  std::ofstream(journal, std::ios::binary | std::ios::app) << whole.substr(0, 40);  // a crash mid-append
  EXPECT_EQ(ids_on_disk(), (std::vector<uint64_t>{1, 2}));
  RegistryStore store(dir_);
  ASSERT_TRUE(store.load().ok());
  ASSERT_TRUE(store.put(record(3), 4));
  EXPECT_EQ(ids_on_disk(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(bytes(journal).find(whole.substr(0, 40) + whole.substr(0, 8)), std::string::npos)
      << "the torn bytes were overwritten, not followed";
}

TEST_F(RegistryStoreTest, ADamagedLineIsRefusedAndBothFilesAreLeftAlone) {
  {
    RegistryStore store(dir_);
    ASSERT_TRUE(store.put(record(1), 2));
    ASSERT_TRUE(store.compact(JobRegistry{2, {record(1)}}));
    ASSERT_TRUE(store.put(record(2), 3));
    ASSERT_TRUE(store.put(record(3), 4));
  }
  const std::string journal = dir_ + "/registry.journal";
  for (const bool last : {false, true}) {
    std::string text = bytes(journal);
    const size_t at = text.find(last ? "job-3" : "job-2");
    ASSERT_NE(at, std::string::npos);
    std::string damaged = text;
    damaged[at] = 'J';  // a whole line, wrong checksum: damage, not a torn write
    std::ofstream(journal, std::ios::binary | std::ios::trunc) << damaged;
    const std::string snapshot = bytes(dir_ + "/registry.json");
    RegistryStore store(dir_);
    auto loaded = store.load();
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, MLOS_ERR_STATE_CORRUPT);
    EXPECT_NE(loaded.error().message.find("registry.journal"), std::string::npos) << loaded.error().message;
    EXPECT_FALSE(store.put(record(4), 5).ok()) << "nothing is appended to a damaged journal";
    EXPECT_EQ(bytes(journal), damaged);
    EXPECT_EQ(bytes(dir_ + "/registry.json"), snapshot);
    std::ofstream(journal, std::ios::binary | std::ios::trunc) << text;
  }
}

TEST_F(RegistryStoreTest, ACompactionInterruptedBeforeTheJournalIsEmptiedLosesNothing) {
  RegistryStore store(dir_);
  ASSERT_TRUE(store.put(record(1), 2));
  ASSERT_TRUE(store.put(record(2), 3));
  ASSERT_TRUE(store.remove({1}));
  const std::string journal = bytes(dir_ + "/registry.journal");
  ASSERT_TRUE(store.compact(JobRegistry{3, {record(2)}}));
  EXPECT_EQ(fs::file_size(dir_ + "/registry.journal"), 0u);
  EXPECT_EQ(ids_on_disk(), std::vector<uint64_t>{2});
  // As if the daemon died after the snapshot, before emptying the journal.
  std::ofstream(dir_ + "/registry.journal", std::ios::binary | std::ios::trunc) << journal;
  EXPECT_EQ(ids_on_disk(), std::vector<uint64_t>{2});
}

TEST_F(RegistryStoreTest, CompactionFallsDueOnlyOnceTheJournalOutgrowsTheSnapshot) {
  RegistryStore store(dir_);
  ASSERT_TRUE(store.load().ok());
  uint64_t id = 1;
  while (!store.compaction_due()) {
    ASSERT_TRUE(store.put(record(id), id + 1));
    ++id;
    ASSERT_LT(id, 100000u);
  }
  EXPECT_GT(fs::file_size(store.journal_path()), 256u * 1024);
  JobRegistry all;
  all.next_id = id;
  for (uint64_t i = 1; i < id; ++i) all.jobs.push_back(record(i));
  ASSERT_TRUE(store.compact(all));
  EXPECT_FALSE(store.compaction_due());
  EXPECT_EQ(ids_on_disk().size(), id - 1);
}

}  // namespace
}  // namespace mlos::daemon
