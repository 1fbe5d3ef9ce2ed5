// SPDX-License-Identifier: Apache-2.0
// The checkpoint writer and reader through the public API, on the real
// file system: round trips, sequences, retention, stale temporaries, async
// saves and their locked staging memory, the job budget, argument errors,
// fallback past a damaged file, and a real ENOSPC on a small tmpfs.
#include <dirent.h>
#include <gtest/gtest.h>
#include <mlos/checkpoint.h>
#include <mlos/checkpoint.hpp>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "integration/proc_observer.h"
#include "integration/temp_dir.h"

namespace fs = std::filesystem;
using namespace mlos_test;

namespace {

constexpr size_t kMiB = 1 << 20;

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<unsigned char>(x);
  }
  return v;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

size_t count_with_suffix(const std::string& dir, const std::string& suffix) {
  size_t n = 0;
  for (const auto& name : names_in(dir)) {
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) ++n;
  }
  return n;
}

std::string file_for(const std::string& dir, const char* prefix, uint64_t seq) {
  char name[128];
  snprintf(name, sizeof name, "%s/%s-%020llu.mlosckpt", dir.c_str(), prefix, static_cast<unsigned long long>(seq));
  return name;
}

mlos_checkpoint_options_t options(uint32_t keep_last = 0, const char* prefix = nullptr) {
  mlos_checkpoint_options_t o{};
  o.struct_size = sizeof o;
  o.keep_last = keep_last;
  o.prefix = prefix;
  return o;
}

class CheckpointWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()) << "cannot create a temp directory"; }
  void TearDown() override {
    if (writer_ != nullptr) mlos_checkpoint_writer_close(writer_);
  }
  void open_writer(const mlos_checkpoint_options_t* o = nullptr) {
    ASSERT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), o, &writer_), MLOS_OK) << mlos_last_error_message();
  }
  // Loads the newest checkpoint and checks it equals `expected`.
  void expect_latest(const std::vector<unsigned char>& expected, uint64_t expected_seq, uint32_t skipped = 0,
                     const char* prefix = nullptr) {
    void* data = nullptr;
    size_t size = 0;
    uint64_t seq = 0;
    uint32_t damaged = 99;
    ASSERT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), prefix, &data, &size, &seq, &damaged), MLOS_OK)
        << mlos_last_error_message();
    EXPECT_EQ(seq, expected_seq);
    EXPECT_EQ(damaged, skipped);
    ASSERT_EQ(size, expected.size());
    EXPECT_EQ(memcmp(data, expected.data(), size), 0);
    mlos_checkpoint_free_data(data);
  }

  TempDir temp_{"mlos-ckpt"};
  const std::string dir_ = temp_.path();
  mlos_checkpoint_writer_t* writer_ = nullptr;
};

TEST_F(CheckpointWriterTest, SaveThenLoadRoundTrips) {
  open_writer();
  const auto payload = pattern(3 * kMiB + 17, 1);
  uint64_t seq = 0;
  ASSERT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), &seq), MLOS_OK)
      << mlos_last_error_message();
  EXPECT_EQ(seq, 1u);
  expect_latest(payload, 1);
  uint64_t vseq = 0;
  size_t vsize = 0;
  EXPECT_EQ(mlos_checkpoint_verify_file(file_for(dir_, "ckpt", 1).c_str(), &vseq, &vsize), MLOS_OK);
  EXPECT_EQ(vseq, 1u);
  EXPECT_EQ(vsize, payload.size());
  EXPECT_EQ(fs::file_size(file_for(dir_, "ckpt", 1)), payload.size() + 48);
}

TEST_F(CheckpointWriterTest, SequencesIncreaseAndContinueAfterReopen) {
  auto o = options(10);
  open_writer(&o);
  const auto payload = pattern(1000, 2);
  for (uint64_t want = 1; want <= 3; ++want) {
    uint64_t seq = 0;
    ASSERT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), &seq), MLOS_OK);
    EXPECT_EQ(seq, want);
  }
  ASSERT_EQ(mlos_checkpoint_writer_close(writer_), MLOS_OK);
  writer_ = nullptr;
  open_writer(&o);
  mlos_checkpoint_writer_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_checkpoint_writer_get_info(writer_, &info), MLOS_OK);
  EXPECT_EQ(info.next_sequence, 4u);
  EXPECT_EQ(info.last_saved_sequence, 0u);
  uint64_t seq = 0;
  ASSERT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), &seq), MLOS_OK);
  EXPECT_EQ(seq, 4u);
  EXPECT_EQ(count_with_suffix(dir_, ".mlosckpt"), 4u);
}

TEST_F(CheckpointWriterTest, KeepLastDeletesOnlyOlderCheckpoints) {
  auto o = options(2);
  open_writer(&o);
  for (unsigned i = 1; i <= 5; ++i) {
    const auto payload = pattern(4096 * i, i);
    ASSERT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), nullptr), MLOS_OK);
    EXPECT_EQ(count_with_suffix(dir_, ".mlosckpt"), std::min(i, 2u)) << "after save " << i;
  }
  EXPECT_TRUE(fs::exists(file_for(dir_, "ckpt", 4)));
  EXPECT_TRUE(fs::exists(file_for(dir_, "ckpt", 5)));
  expect_latest(pattern(4096 * 5, 5), 5);
  mlos_checkpoint_writer_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_checkpoint_writer_get_info(writer_, &info), MLOS_OK);
  EXPECT_EQ(info.retention_deleted, 3u);
  EXPECT_EQ(info.saves_succeeded, 5u);
}

TEST_F(CheckpointWriterTest, DefaultKeepLastIsThree) {
  open_writer();
  const auto payload = pattern(100, 3);
  for (int i = 0; i < 6; ++i) ASSERT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), nullptr), MLOS_OK);
  EXPECT_EQ(count_with_suffix(dir_, ".mlosckpt"), 3u);
}

TEST_F(CheckpointWriterTest, StaleTemporariesAreRemovedAtOpen) {
  const std::string ours = file_for(dir_, "ckpt", 7) + ".tmp";
  const std::string other_prefix = file_for(dir_, "other", 7) + ".tmp";
  std::ofstream(ours) << "torn";
  std::ofstream(other_prefix) << "another writer's";
  open_writer();
  EXPECT_FALSE(fs::exists(ours));
  EXPECT_TRUE(fs::exists(other_prefix));  // not this prefix: may belong to a live writer
  // A temporary does not count as a checkpoint: the sequence starts at 1.
  uint64_t seq = 0;
  const auto payload = pattern(10, 4);
  ASSERT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), &seq), MLOS_OK);
  EXPECT_EQ(seq, 1u);
}

TEST_F(CheckpointWriterTest, AsyncSaveCopiesTheCallersBuffer) {
  open_writer();
  const auto original = pattern(6 * kMiB, 5);
  auto buffer = original;
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, buffer.data(), buffer.size(), &ticket), MLOS_OK)
      << mlos_last_error_message();
  EXPECT_EQ(ticket, 1u);
  std::memset(buffer.data(), 0xee, buffer.size());  // the training loop moves on at once
  ASSERT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK) << mlos_last_error_message();
  expect_latest(original, 1);
  // A second async save reuses the staging memory and gets the next ticket.
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, buffer.data(), 1000, &ticket), MLOS_OK);
  EXPECT_EQ(ticket, 2u);
  ASSERT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK);
  expect_latest(std::vector<unsigned char>(1000, 0xee), 2);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, 1, 0), MLOS_OK);  // earlier tickets stay answerable
}

TEST_F(CheckpointWriterTest, AsyncThreadRunsAtCheckpointIoPriority) {
  const IoPrio caller_before = task_ioprio(current_tid());
  open_writer();
  const auto payload = pattern(4096, 6);
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, payload.data(), payload.size(), &ticket), MLOS_OK);
  ASSERT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK);
  pid_t writer_tid = 0;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::string comm = read_text(task.path().string() + "/comm");
    if (comm == "mlos-ckpt\n") writer_tid = std::stoi(task.path().filename().string());
  }
  ASSERT_NE(writer_tid, 0) << "no thread named mlos-ckpt";
  const IoPrio prio = task_ioprio(writer_tid);
  EXPECT_EQ(prio.io_class, 2);  // best-effort, as the CHECKPOINT phase says
  EXPECT_EQ(prio.level, 0);
  const IoPrio caller_after = task_ioprio(current_tid());  // the caller's own is not touched
  EXPECT_EQ(caller_after.io_class, caller_before.io_class);
  EXPECT_EQ(caller_after.level, caller_before.level);
  mlos_checkpoint_writer_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_checkpoint_writer_get_info(writer_, &info), MLOS_OK);
  EXPECT_TRUE(info.io_priority_applied);
}

TEST_F(CheckpointWriterTest, StagingMemoryIsLocked) {
  SKIP_IF_MLOCK_UNOBSERVABLE();
  const long before = vm_locked_kb();
  open_writer();
  const auto payload = pattern(8 * kMiB, 7);
  uint64_t ticket = 0;
  int rc = mlos_checkpoint_save_async(writer_, payload.data(), payload.size(), &ticket);
  if (rc == MLOS_ERR_LOCK_LIMIT) GTEST_SKIP() << "cannot lock 8 MiB here: " << mlos_last_error_message();
  ASSERT_EQ(rc, MLOS_OK) << mlos_last_error_message();
  ASSERT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK);
  // Kept for the next save: still locked after the save completed.
  EXPECT_GE(vm_locked_kb() - before, static_cast<long>(8 * kMiB / 1024));
  mlos_checkpoint_writer_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_checkpoint_writer_get_info(writer_, &info), MLOS_OK);
  EXPECT_EQ(info.staging_bytes, 8 * kMiB);
  EXPECT_TRUE(info.staging_locked);
  ASSERT_EQ(mlos_checkpoint_writer_close(writer_), MLOS_OK);
  writer_ = nullptr;
  EXPECT_EQ(vm_locked_kb(), before);
}

TEST_F(CheckpointWriterTest, StagingCountsAgainstTheJobBudget) {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 4 * kMiB, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  auto o = options();
  o.resources = res;
  open_writer(&o);
  const auto big = pattern(8 * kMiB, 8);
  uint64_t ticket = 0;
  EXPECT_EQ(mlos_checkpoint_save_async(writer_, big.data(), big.size(), &ticket), MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_EQ(count_with_suffix(dir_, ".mlosckpt"), 0u);  // nothing written
  mlos_checkpoint_writer_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(mlos_checkpoint_writer_get_info(writer_, &info), MLOS_OK);
  EXPECT_EQ(info.next_sequence, 1u);  // no sequence used up
  EXPECT_EQ(info.staging_bytes, 0u);

  const auto small = pattern(kMiB, 9);
  int rc = mlos_checkpoint_save_async(writer_, small.data(), small.size(), &ticket);
  if (rc == MLOS_ERR_LOCK_LIMIT) {
    mlos_training_release_resources(res);
    GTEST_SKIP() << "cannot lock 1 MiB here";
  }
  ASSERT_EQ(rc, MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(ticket, 1u);
  ASSERT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK);
  // The 1 MiB of staging is part of the job's 4 MiB: 3.5 MiB more do not fit.
  EXPECT_EQ(mlos_training_alloc_checkpoint_buffer(res, 3 * kMiB + kMiB / 2), nullptr);
  EXPECT_EQ(mlos_last_error(), MLOS_ERR_INSUFFICIENT_MEMORY);
  void* fits = mlos_training_alloc_checkpoint_buffer(res, 2 * kMiB);
  EXPECT_NE(fits, nullptr) << mlos_last_error_message();
  EXPECT_EQ(mlos_training_free_checkpoint_buffer(res, fits), MLOS_OK);
  ASSERT_EQ(mlos_checkpoint_writer_close(writer_), MLOS_OK);
  writer_ = nullptr;
  // Closing the writer gave the staging back to the budget.
  void* all = mlos_training_alloc_checkpoint_buffer(res, 4 * kMiB);
  EXPECT_NE(all, nullptr) << mlos_last_error_message();
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST_F(CheckpointWriterTest, BadArgumentsGetTheDocumentedCodes) {
  mlos_checkpoint_writer_t* w = reinterpret_cast<mlos_checkpoint_writer_t*>(0x1);
  EXPECT_EQ(mlos_checkpoint_writer_open(nullptr, nullptr, &w), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), nullptr, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  for (const char* bad : {"", "a/b", "..x/y", "sp ace", "star*"}) {
    auto o = options(0, bad);
    EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_ERR_INVALID_ARGUMENT) << bad;
  }
  auto long_prefix = std::string(65, 'p');
  auto o = options(0, long_prefix.c_str());
  EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_ERR_INVALID_ARGUMENT);
  o = options();
  o.flags = 1u << 7;
  EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_ERR_INVALID_ARGUMENT);
  o = options();
  o.struct_size = 4;
  EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_ERR_VERSION_MISMATCH);
  o = options();
  o.resources = reinterpret_cast<mlos_training_resources_t*>(0x1234);
  EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_checkpoint_writer_open((dir_ + "/missing").c_str(), nullptr, &w), MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(count_with_suffix(dir_, ""), 0u);  // no failed open left a file

  open_writer();
  const char byte = 1;
  uint64_t t = 0;
  EXPECT_EQ(mlos_checkpoint_save(writer_, &byte, 0, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_save(writer_, nullptr, 1, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_save_async(writer_, &byte, 0, &t), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_save_async(writer_, &byte, 1, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_save(nullptr, &byte, 1, nullptr), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, 0, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, 1, 0), MLOS_ERR_INVALID_ARGUMENT);  // not issued yet
  EXPECT_EQ(mlos_checkpoint_wait(nullptr, 1, 0), MLOS_ERR_INVALID_HANDLE);
  mlos_checkpoint_writer_info_t info{};
  info.struct_size = 4;
  EXPECT_EQ(mlos_checkpoint_writer_get_info(writer_, &info), MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(count_with_suffix(dir_, ".mlosckpt"), 0u);

  // One writer per directory and prefix; another prefix is independent.
  EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), nullptr, &w), MLOS_ERR_SYSTEM);
  EXPECT_NE(std::string(mlos_last_error_message()).find("another checkpoint writer"), std::string::npos);
  auto other = options(0, "other");
  ASSERT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &other, &w), MLOS_OK);
  EXPECT_EQ(mlos_checkpoint_writer_close(w), MLOS_OK);
  EXPECT_EQ(mlos_checkpoint_writer_close(nullptr), MLOS_OK);
  // A closed or made-up handle is recognised, never dereferenced.
  EXPECT_EQ(mlos_checkpoint_writer_close(w), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_checkpoint_save(w, &byte, 1, nullptr), MLOS_ERR_INVALID_HANDLE);
  auto* made_up = reinterpret_cast<mlos_checkpoint_writer_t*>(0x636b0000deadbeefull);
  EXPECT_EQ(mlos_checkpoint_wait(made_up, 1, 0), MLOS_ERR_INVALID_HANDLE);

  void* data = reinterpret_cast<void*>(0x1);
  size_t size = 5;
  EXPECT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, nullptr, nullptr), MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(data, nullptr);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(mlos_checkpoint_load_latest((dir_ + "/missing").c_str(), nullptr, &data, &size, nullptr, nullptr),
            MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(mlos_checkpoint_load_latest(nullptr, nullptr, &data, &size, nullptr, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), "a/b", &data, &size, nullptr, nullptr),
            MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_verify_file(nullptr, nullptr, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_checkpoint_verify_file((dir_ + "/none").c_str(), nullptr, nullptr), MLOS_ERR_NOT_FOUND);
  EXPECT_STREQ(mlos_strerror(MLOS_ERR_IO), "I/O error");
  EXPECT_STREQ(mlos_strerror(MLOS_ERR_CHECKPOINT_CORRUPT), "checkpoint corrupt");
  EXPECT_STREQ(mlos_strerror(MLOS_ERR_NOT_FOUND), "not found");
}

TEST_F(CheckpointWriterTest, LoadFallsBackPastADamagedNewestFile) {
  open_writer();
  std::vector<std::vector<unsigned char>> saved;
  for (unsigned i = 1; i <= 3; ++i) {
    saved.push_back(pattern(5000 + i, 10 + i));
    ASSERT_EQ(mlos_checkpoint_save(writer_, saved.back().data(), saved.back().size(), nullptr), MLOS_OK);
  }
  {
    std::fstream f(file_for(dir_, "ckpt", 3), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a' ^ static_cast<char>(saved[2][100]));
  }
  EXPECT_EQ(mlos_checkpoint_verify_file(file_for(dir_, "ckpt", 3).c_str(), nullptr, nullptr),
            MLOS_ERR_CHECKPOINT_CORRUPT);
  EXPECT_NE(std::string(mlos_last_error_message()).find("payload checksum mismatch"), std::string::npos);
  expect_latest(saved[1], 2, /*skipped=*/1);
  // A torn file (truncated into its payload) is skipped the same way.
  fs::resize_file(file_for(dir_, "ckpt", 2), 4000);
  expect_latest(saved[0], 1, /*skipped=*/2);
  // Nothing verifies: CHECKPOINT_CORRUPT, not NOT_FOUND.
  fs::resize_file(file_for(dir_, "ckpt", 1), 10);
  void* data = nullptr;
  size_t size = 0;
  EXPECT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, nullptr, nullptr),
            MLOS_ERR_CHECKPOINT_CORRUPT);
  EXPECT_EQ(data, nullptr);
  // The next save continues after the damaged files' sequence numbers.
  uint64_t seq = 0;
  ASSERT_EQ(mlos_checkpoint_save(writer_, saved[0].data(), saved[0].size(), &seq), MLOS_OK);
  EXPECT_EQ(seq, 4u);
}

TEST_F(CheckpointWriterTest, CppWrapperSavesAndLoads) {
  const auto payload = pattern(12345, 20);
  {
    mlos::CheckpointWriter w;
    ASSERT_EQ(w.open(dir_.c_str()), MLOS_OK) << mlos_last_error_message();
    uint64_t ticket = 0;
    ASSERT_EQ(w.save_async(payload.data(), payload.size(), &ticket), MLOS_OK);
    EXPECT_EQ(w.wait(ticket), MLOS_OK);
    mlos_checkpoint_writer_info_t info{};
    ASSERT_EQ(w.info(&info), MLOS_OK);
    EXPECT_EQ(info.last_saved_sequence, ticket);
    mlos::CheckpointWriter moved = std::move(w);
    EXPECT_FALSE(w.is_open());
    EXPECT_EQ(w.save(payload.data(), payload.size()), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(moved.save(payload.data(), payload.size()), MLOS_OK);
  }  // closed here: the lock is free again
  mlos::LoadedCheckpoint c;
  ASSERT_EQ(mlos::load_latest_checkpoint(dir_.c_str(), nullptr, &c), MLOS_OK);
  EXPECT_EQ(c.sequence(), 2u);
  ASSERT_EQ(c.size(), payload.size());
  EXPECT_EQ(memcmp(c.data(), payload.data(), c.size()), 0);
  mlos::CheckpointWriter again;
  EXPECT_EQ(again.open(dir_.c_str()), MLOS_OK);
}

TEST_F(CheckpointWriterTest, AForkedChildCannotUseItsParentsWriter) {
  open_writer();
  const auto payload = pattern(1000, 21);
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, payload.data(), payload.size(), &ticket), MLOS_OK);
  const pid_t pid = fork();
  if (pid == 0) {
    // Exit code: which expectation failed (0 = none).
    if (mlos_checkpoint_save(writer_, payload.data(), payload.size(), nullptr) != MLOS_ERR_INVALID_HANDLE) _exit(1);
    if (mlos_checkpoint_wait(writer_, ticket, 0) != MLOS_ERR_INVALID_HANDLE) _exit(2);
    if (mlos_checkpoint_writer_close(writer_) != MLOS_OK) _exit(3);  // forgets the child's copy only
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // The parent's writer is untouched.
  EXPECT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_OK);
  uint64_t seq = 0;
  EXPECT_EQ(mlos_checkpoint_save(writer_, payload.data(), payload.size(), &seq), MLOS_OK);
  EXPECT_EQ(seq, ticket + 1);
}

// A real full disk: a 1 MiB tmpfs.
class CheckpointEnospcTest : public CheckpointWriterTest {
 protected:
  void SetUp() override {
    CheckpointWriterTest::SetUp();
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=1m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs (" << strerror(errno) << "); needs CAP_SYS_ADMIN";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (writer_ != nullptr) mlos_checkpoint_writer_close(writer_);
    writer_ = nullptr;
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    CheckpointWriterTest::TearDown();
  }
  bool mounted_ = false;
};

TEST_F(CheckpointEnospcTest, FullDiskFailsWithIoAndKeepsThePreviousCheckpoint) {
  open_writer();
  const auto small = pattern(64 * 1024, 30);
  ASSERT_EQ(mlos_checkpoint_save(writer_, small.data(), small.size(), nullptr), MLOS_OK);
  const auto big = pattern(2 * kMiB, 31);
  EXPECT_EQ(mlos_checkpoint_save(writer_, big.data(), big.size(), nullptr), MLOS_ERR_IO);
  EXPECT_NE(std::string(mlos_last_error_message()).find("No space left on device"), std::string::npos)
      << mlos_last_error_message();
  EXPECT_EQ(count_with_suffix(dir_, ".tmp"), 0u);
  EXPECT_EQ(count_with_suffix(dir_, ".mlosckpt"), 1u);
  expect_latest(small, 1);
  // Async: the error arrives through wait.
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(writer_, big.data(), big.size(), &ticket), MLOS_OK);
  EXPECT_EQ(mlos_checkpoint_wait(writer_, ticket, -1), MLOS_ERR_IO);
  EXPECT_EQ(count_with_suffix(dir_, ".tmp"), 0u);
  expect_latest(small, 1);
  // The writer is still usable; the failed saves used up sequences 2 and 3.
  uint64_t seq = 0;
  ASSERT_EQ(mlos_checkpoint_save(writer_, small.data(), 1000, &seq), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(seq, 4u);
}

}  // namespace
