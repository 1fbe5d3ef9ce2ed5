// SPDX-License-Identifier: Apache-2.0
// JobStore on real files: changes durable before the reply, a compaction
// only when due (the records listed only then), and a registry that fell
// behind (a removal that could not be written) caught up by a snapshot.
#include "daemon/job_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "integration/temp_dir.h"

namespace mlos::daemon {
namespace {

namespace fs = std::filesystem;

JobRecord record(uint64_t id, size_t label_bytes = 8) {
  JobRecord r;
  r.id = id;
  r.owner = ProcessId{static_cast<int>(1000 + id), 77};
  r.uid = 1000;
  r.cpus = *CpuSet::parse_list("0");
  r.label = std::string(label_bytes, 'x');
  return r;
}

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()) << "no temporary directory"; }

  // The registry as the jobs listed in `ids`, counting the calls.
  JobStore::AllJobs all(const std::vector<uint64_t>& ids) {
    return [this, ids] {
      ++listed_;
      JobRegistry r;
      r.next_id = ids.empty() ? 1 : ids.back() + 1;
      for (uint64_t id : ids) r.jobs.push_back(record(id));
      return r;
    };
  }
  std::vector<uint64_t> on_disk(const std::string& dir) {
    auto loaded = RegistryStore(dir).load();
    EXPECT_TRUE(loaded.ok()) << loaded.error().describe();
    std::vector<uint64_t> ids;
    if (loaded.ok() && loaded->has_value()) {
      for (const auto& r : (*loaded)->jobs) ids.push_back(r.id);
    }
    return ids;
  }

  mlos_test::TempDir temp_{"mlos-jobstore"};
  const std::string& dir_ = temp_.path();
  int listed_ = 0;
  uint64_t now_ = 0;
};

TEST_F(JobStoreTest, ChangesAreOnDiskBeforeTheReplyAndTheRecordsAreListedOnlyForASnapshot) {
  JobStore store(std::make_shared<RegistryStore>(dir_), [this] { return now_ += 1000; });
  ASSERT_TRUE(store.put(record(1), 2, all({1})).ok());
  ASSERT_TRUE(store.put(record(2), 3, all({1, 2})).ok());
  EXPECT_EQ(on_disk(dir_), (std::vector<uint64_t>{1, 2}));
  ASSERT_TRUE(store.remove({1}, all({2})).ok());
  EXPECT_EQ(on_disk(dir_), (std::vector<uint64_t>{2}));
  EXPECT_EQ(listed_, 0);  // a small journal: no compaction yet
  // Changes of about 1 KiB each outgrow the journal's 256 KiB floor.
  std::vector<uint64_t> ids;
  for (uint64_t id = 3; id < 400 && listed_ == 0; ++id) {
    ids.push_back(id);
    ASSERT_TRUE(store.put(record(id, 1024), id + 1, all(ids)).ok());
  }
  EXPECT_EQ(listed_, 1);
  EXPECT_EQ(on_disk(dir_), ids);
  EXPECT_LT(fs::file_size(fs::path(dir_) / "registry.journal"), 4096u);  // emptied by the snapshot
}

TEST_F(JobStoreTest, ARemovalThatCannotBeWrittenFallsBehindAndASnapshotCatchesUp) {
  const std::string missing = dir_ + "/not-yet";
  JobStore store(std::make_shared<RegistryStore>(missing), [this] { return now_ += 1000; });
  Status put = store.put(record(1), 2, all({1}));
  ASSERT_FALSE(put.ok());  // the reply says so: the caller takes the grant back
  EXPECT_FALSE(store.behind());
  ASSERT_FALSE(store.remove({1}, all({})).ok());
  EXPECT_TRUE(store.behind());
  store.put_later(record(3), 4);  // nobody waits for it: still behind
  EXPECT_TRUE(store.behind());
  ASSERT_EQ(mkdir(missing.c_str(), 0700), 0);
  store.compact_if_due(all({3}));
  EXPECT_FALSE(store.behind());
  EXPECT_EQ(listed_, 1);
  EXPECT_EQ(on_disk(missing), (std::vector<uint64_t>{3}));
  store.compact_if_due(all({3}));  // nothing due now
  EXPECT_EQ(listed_, 1);
}

}  // namespace
}  // namespace mlos::daemon
