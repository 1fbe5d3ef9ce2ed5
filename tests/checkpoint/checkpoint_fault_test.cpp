// SPDX-License-Identifier: Apache-2.0
// The checkpoint writer's error paths on the real code path: write, fsync,
// fdatasync and rename fail on demand through symbol interposition
// (syscall_faults.h). After every failure: the documented code, the
// previous checkpoint intact and loadable, no temporary left, and the writer
// still usable.
#include <gtest/gtest.h>
#include <mlos/checkpoint.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/syscall_faults.h"
#include "integration/temp_dir.h"

namespace fs = std::filesystem;
using faults::Op;
using faults::Target;

namespace {

std::vector<unsigned char> payload(size_t n, unsigned char seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(seed + i * 7);
  return v;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class CheckpointFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.empty()) << "cannot create a temp directory";
    mlos_checkpoint_options_t o{};
    o.struct_size = sizeof o;
    o.keep_last = 1;  // a retention run too early would delete the previous checkpoint
    ASSERT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &writer_), MLOS_OK) << mlos_last_error_message();
    ASSERT_EQ(mlos_checkpoint_save(writer_, previous_.data(), previous_.size(), &previous_seq_), MLOS_OK);
    faults::watch(dir_);
  }
  void TearDown() override {
    faults::reset();
    if (writer_ != nullptr) {
      EXPECT_EQ(mlos_checkpoint_writer_close(writer_), MLOS_OK);
    }
  }

  size_t count_files(const std::string& suffix) const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += ends_with(e.path().string(), suffix);
    return n;
  }

  // The aftermath every failed save must leave.
  void expect_previous_intact_and_writer_usable() {
    EXPECT_EQ(count_files(".tmp"), 0u) << "a temporary was left behind";
    EXPECT_EQ(count_files(".mlosckpt"), 1u);
    void* data = nullptr;
    size_t size = 0;
    uint64_t seq = 0;
    ASSERT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, &seq, nullptr), MLOS_OK)
        << mlos_last_error_message();
    EXPECT_EQ(seq, previous_seq_);
    ASSERT_EQ(size, previous_.size());
    EXPECT_EQ(memcmp(data, previous_.data(), size), 0);
    mlos_checkpoint_free_data(data);
    faults::reset();
    const auto next = payload(777, 9);
    uint64_t next_seq = 0;
    ASSERT_EQ(mlos_checkpoint_save(writer_, next.data(), next.size(), &next_seq), MLOS_OK)
        << mlos_last_error_message();
    EXPECT_GT(next_seq, previous_seq_);
    EXPECT_EQ(count_files(".mlosckpt"), 1u);  // keep_last 1: the previous one is gone only now
  }

  // Sync calls (fsync + fdatasync) the save made on checkpoint files, and on
  // the directory itself.
  std::pair<int, int> sync_calls() const {
    int files = 0, directory = 0;
    for (const auto& c : faults::calls()) {
      if (c.op != Op::kFsync && c.op != Op::kFdatasync) continue;
      (c.path == dir_ ? directory : files)++;
    }
    return {files, directory};
  }

  mlos_test::TempDir temp_{"mlos-ckpt-fault"};
  const std::string dir_ = temp_.path();  // canonical, as /proc/self/fd shows it
  mlos_checkpoint_writer_t* writer_ = nullptr;
  const std::vector<unsigned char> previous_ = payload(100000, 1);
  uint64_t previous_seq_ = 0;
  const std::vector<unsigned char> next_ = payload(300000, 2);
};

TEST_F(CheckpointFaultTest, WriteEnospcFailsWithIo) {
  faults::fail_nth(Op::kWrite, Target::kFileInDir, 1, ENOSPC);
  EXPECT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), nullptr), MLOS_ERR_IO);
  EXPECT_TRUE(faults::fired());
  EXPECT_NE(std::string(mlos_last_error_message()).find("No space left on device"), std::string::npos);
  EXPECT_EQ(sync_calls(), std::make_pair(0, 0));  // nothing synced after a failed write
  expect_previous_intact_and_writer_usable();
}

TEST_F(CheckpointFaultTest, WriteEioOnTheFooterFailsWithIo) {
  faults::fail_nth(Op::kWrite, Target::kFileInDir, 2, EIO);  // the payload went through
  EXPECT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), nullptr), MLOS_ERR_IO);
  EXPECT_TRUE(faults::fired());
  EXPECT_NE(std::string(mlos_last_error_message()).find("Input/output error"), std::string::npos);
  expect_previous_intact_and_writer_usable();
}

TEST_F(CheckpointFaultTest, ShortWritesAndEintrAreCompleted) {
  faults::short_write_nth(1);
  uint64_t seq = 0;
  ASSERT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), &seq), MLOS_OK) << mlos_last_error_message();
  EXPECT_TRUE(faults::fired());
  faults::fail_nth(Op::kWrite, Target::kFileInDir, 1, EINTR);
  ASSERT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), &seq), MLOS_OK) << mlos_last_error_message();
  EXPECT_TRUE(faults::fired());
  void* data = nullptr;
  size_t size = 0;
  uint64_t loaded = 0;
  ASSERT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, &loaded, nullptr), MLOS_OK);
  EXPECT_EQ(loaded, seq);
  ASSERT_EQ(size, next_.size());
  EXPECT_EQ(memcmp(data, next_.data(), size), 0);
  mlos_checkpoint_free_data(data);
}

TEST_F(CheckpointFaultTest, FdatasyncEioIsReportedAndNeverRetried) {
  faults::fail_nth(Op::kFdatasync, Target::kFileInDir, 1, EIO);
  EXPECT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), nullptr), MLOS_ERR_IO);
  EXPECT_TRUE(faults::fired());
  EXPECT_NE(std::string(mlos_last_error_message()).find("not retried"), std::string::npos);
  // Exactly one sync of the file, and no rename or directory sync after it.
  EXPECT_EQ(sync_calls(), std::make_pair(1, 0));
  for (const auto& c : faults::calls()) EXPECT_NE(c.op, Op::kRename) << c.path;
  expect_previous_intact_and_writer_usable();
}

TEST_F(CheckpointFaultTest, RenameFailureFailsWithIo) {
  faults::fail_nth(Op::kRename, Target::kFileInDir, 1, EIO);
  EXPECT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), nullptr), MLOS_ERR_IO);
  EXPECT_TRUE(faults::fired());
  EXPECT_NE(std::string(mlos_last_error_message()).find("cannot rename"), std::string::npos);
  expect_previous_intact_and_writer_usable();
}

TEST_F(CheckpointFaultTest, DirectoryFsyncFailureTakesTheNewFileBack) {
  faults::fail_nth(Op::kFsync, Target::kDirectoryItself, 1, EIO);
  uint64_t seq = 0;
  EXPECT_EQ(mlos_checkpoint_save(writer_, next_.data(), next_.size(), &seq), MLOS_ERR_IO);
  EXPECT_TRUE(faults::fired());
  EXPECT_NE(std::string(mlos_last_error_message()).find("fsync of directory"), std::string::npos);
  EXPECT_EQ(sync_calls(), std::make_pair(1, 1));  // one of each, neither retried
  expect_previous_intact_and_writer_usable();
}

TEST_F(CheckpointFaultTest, AsyncSaveReportsTheInjectedErrorThroughWait) {
  faults::fail_nth(Op::kFdatasync, Target::kFileInDir, 1, EIO);
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, next_.data(), next_.size(), &ticket), MLOS_OK);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_ERR_IO);
  EXPECT_NE(std::string(mlos_last_error_message()).find("fdatasync"), std::string::npos);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, ticket, 0), MLOS_ERR_IO);  // the result stays
  EXPECT_EQ(sync_calls(), std::make_pair(1, 0));
  expect_previous_intact_and_writer_usable();
}

TEST_F(CheckpointFaultTest, CloseReportsAnAsyncErrorNobodyWaitedFor) {
  faults::fail_nth(Op::kWrite, Target::kFileInDir, 1, ENOSPC);
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, next_.data(), next_.size(), &ticket), MLOS_OK);
  EXPECT_EQ(mlos_checkpoint_writer_close(writer_), MLOS_ERR_IO);
  writer_ = nullptr;
  EXPECT_NE(std::string(mlos_last_error_message()).find("No space left"), std::string::npos);
  EXPECT_EQ(count_files(".tmp"), 0u);
  EXPECT_EQ(count_files(".mlosckpt"), 1u);
}

TEST_F(CheckpointFaultTest, AsyncSaveReturnsBeforeTheDataIsDurable) {
  faults::gate(Op::kFdatasync, Target::kFileInDir);  // the background sync blocks here
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, next_.data(), next_.size(), &ticket), MLOS_OK);
  while (!faults::gate_holds_a_call()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(mlos_checkpoint_wait(writer_, ticket, 50), MLOS_ERR_TIMEOUT);
  char final_name[128];
  snprintf(final_name, sizeof final_name, "/ckpt-%020llu.mlosckpt", static_cast<unsigned long long>(ticket));
  EXPECT_FALSE(fs::exists(dir_ + final_name));  // not renamed before it is synced

  // Blocking rule: the next save_async waits while this one owns the staging memory.
  std::atomic<bool> second_returned{false};
  uint64_t second = 0;
  std::thread t([&] {
    EXPECT_EQ(mlos_checkpoint_save_async(writer_, previous_.data(), previous_.size(), &second), MLOS_OK);
    second_returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(second_returned.load());
  faults::release_gate();
  t.join();
  EXPECT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK);
  EXPECT_EQ(second, ticket + 1);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, second, -1), MLOS_OK);
  // Both became durable; with keep_last 1 the second may already have
  // retired the first, so look at the newest.
  void* data = nullptr;
  size_t size = 0;
  uint64_t newest = 0;
  ASSERT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, &newest, nullptr), MLOS_OK);
  EXPECT_EQ(newest, second);
  EXPECT_EQ(size, previous_.size());
  mlos_checkpoint_free_data(data);
}

TEST_F(CheckpointFaultTest, ReleasingTheJobWaitsForAnAsyncSaveStagedInItsBuffer) {
  // A writer staging in a job's checkpoint buffer; the job is released
  // while a save is still writing from that buffer.
  mlos_training_resource_request_t req{};
  req.num_cpus = 1;
  req.numa_node_preference = -1;
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  const std::string sub = dir_ + "/job";
  fs::create_directory(sub);
  mlos_checkpoint_options_t o{};
  o.struct_size = sizeof o;
  o.resources = res;
  mlos_checkpoint_writer_t* w = nullptr;
  ASSERT_EQ(mlos_checkpoint_writer_open(sub.c_str(), &o, &w), MLOS_OK) << mlos_last_error_message();
  faults::gate(Op::kWrite, Target::kFileInDir);  // the background write blocks here
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(w, next_.data(), next_.size(), &ticket), MLOS_OK) << mlos_last_error_message();
  while (!faults::gate_holds_a_call()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  std::atomic<bool> released{false};
  std::thread releaser([&] {
    EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
    released = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(released.load()) << "release freed the staging memory under a save in flight";
  faults::release_gate();
  releaser.join();
  EXPECT_EQ(mlos_checkpoint_wait(w, ticket, -1), MLOS_OK) << mlos_last_error_message();
  void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(mlos_checkpoint_load_latest(sub.c_str(), nullptr, &data, &size, nullptr, nullptr), MLOS_OK);
  ASSERT_EQ(size, next_.size());
  EXPECT_EQ(memcmp(data, next_.data(), size), 0);
  mlos_checkpoint_free_data(data);
  // The job is gone: no more staging from it.
  EXPECT_EQ(mlos_checkpoint_save_async(w, next_.data(), next_.size(), &ticket), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_checkpoint_writer_close(w), MLOS_OK);
}

}  // namespace

// mlos_checkpoint_write_file: the same protocol for a plain file (what
// torch.save writes). Every injected failure leaves the old file whole and
// no temporary; success replaces it with exactly the new bytes.
class PlainFileFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mlos_checkpoint_write_file(path_.c_str(), old_.data(), old_.size()), MLOS_OK)
        << mlos_last_error_message();
    faults::watch(temp_.path());
  }
  void TearDown() override { faults::reset(); }

  std::vector<unsigned char> contents() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(temp_.path())) ++n;
    return n;
  }

  mlos_test::TempDir temp_{"mlos-plain-fault"};
  const std::string path_ = temp_.path() + "/model.pt";
  const std::vector<unsigned char> old_ = payload(50000, 3);
  const std::vector<unsigned char> new_ = payload(2500000, 4);  // several write chunks
};

TEST_F(PlainFileFaultTest, ReplacesTheFileWithExactlyTheNewBytes) {
  ASSERT_EQ(mlos_checkpoint_write_file(path_.c_str(), new_.data(), new_.size()), MLOS_OK);
  EXPECT_EQ(contents(), new_);  // no footer
  EXPECT_EQ(entries(), 1u);
  int fdatasyncs = 0, dir_fsyncs = 0;
  for (const auto& c : faults::calls()) {
    fdatasyncs += c.op == Op::kFdatasync;
    dir_fsyncs += c.op == Op::kFsync && c.path == temp_.path();
  }
  EXPECT_EQ(fdatasyncs, 1);
  EXPECT_EQ(dir_fsyncs, 1);
}

TEST_F(PlainFileFaultTest, EveryFailureLeavesTheOldFileWhole) {
  const std::vector<std::pair<Op, Target>> cases = {{Op::kWrite, Target::kFileInDir},
                                                    {Op::kFdatasync, Target::kFileInDir},
                                                    {Op::kRename, Target::kFileInDir}};
  for (const auto& [op, target] : cases) {
    faults::fail_nth(op, target, 1, EIO);
    EXPECT_EQ(mlos_checkpoint_write_file(path_.c_str(), new_.data(), new_.size()), MLOS_ERR_IO);
    EXPECT_TRUE(faults::fired());
    EXPECT_EQ(contents(), old_);
    EXPECT_EQ(entries(), 1u) << "a temporary was left behind";
    faults::watch(temp_.path());
  }
}

TEST_F(PlainFileFaultTest, BadArgumentsAndAMissingDirectoryAreRefused) {
  EXPECT_EQ(mlos_checkpoint_write_file(nullptr, new_.data(), 1), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_write_file(path_.c_str(), nullptr, 1), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_write_file((temp_.path() + "/").c_str(), new_.data(), 1), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_write_file((temp_.path() + "/no/such/x.pt").c_str(), new_.data(), 1),
            MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(contents(), old_);
}
