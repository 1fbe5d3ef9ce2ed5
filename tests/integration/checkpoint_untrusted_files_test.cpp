// SPDX-License-Identifier: Apache-2.0
// A checkpoint directory is not trusted: a FIFO named like a checkpoint must
// not make the reader wait forever, and a prefix must not make hidden files.
// Calls that hung before the fix run in a forked child under alarm(), so a
// regression fails the test instead of hanging it.
#include <gtest/gtest.h>
#include <mlos/checkpoint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "integration/child_process.h"
#include "integration/temp_dir.h"

namespace fs = std::filesystem;
using mlos_test::ChildProcess;
using mlos_test::TempDir;

namespace {

constexpr unsigned kTimeoutSeconds = 20;  // far above a non-blocking call on a loaded machine

std::string file_for(const std::string& dir, uint64_t seq) {
  char name[64];
  snprintf(name, sizeof name, "/ckpt-%020llu.mlosckpt", static_cast<unsigned long long>(seq));
  return dir + name;
}

// Runs `call` in a forked child that SIGALRM kills after kTimeoutSeconds;
// returns "rc=<code> <message>", or "killed" if it hung or crashed.
std::string in_child_with_timeout(const std::function<int()>& call) {
  ChildProcess child(
      [&](ChildProcess& self) {
        alarm(kTimeoutSeconds);
        const int rc = call();
        self.report("rc=" + std::to_string(rc) + " " + (rc == MLOS_OK ? "" : mlos_last_error_message()));
        return 0;
      },
      /*linger=*/false);
  std::string line = child.read_line();
  return child.wait_exit() == 0 ? line : "killed";
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

class CheckpointUntrustedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()) << "cannot create a temp directory"; }
  TempDir temp_{"mlos-ckpt-untrusted"};
  const std::string dir_ = temp_.path();
};

}  // namespace

TEST_F(CheckpointUntrustedFilesTest, VerifyRefusesAFifoWithoutWaiting) {
  const std::string fifo = file_for(dir_, 1);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << strerror(errno);
  const std::string out =
      in_child_with_timeout([&] { return mlos_checkpoint_verify_file(fifo.c_str(), nullptr, nullptr); });
  EXPECT_EQ(out.rfind("rc=" + std::to_string(MLOS_ERR_CHECKPOINT_CORRUPT) + " ", 0), 0u) << out;
  EXPECT_NE(out.find("not a regular file"), std::string::npos) << out;
}

TEST_F(CheckpointUntrustedFilesTest, LoadLatestSkipsAFifoAndFallsBackPastIt) {
  mlos_checkpoint_writer_t* w = nullptr;
  ASSERT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), nullptr, &w), MLOS_OK) << mlos_last_error_message();
  const char payload[] = "the one real checkpoint";
  uint64_t seq = 0;
  ASSERT_EQ(mlos_checkpoint_save(w, payload, sizeof payload, &seq), MLOS_OK) << mlos_last_error_message();
  ASSERT_EQ(mlos_checkpoint_writer_close(w), MLOS_OK);
  ASSERT_EQ(mkfifo(file_for(dir_, seq + 1).c_str(), 0600), 0) << strerror(errno);  // newer than the real one
  const std::string out = in_child_with_timeout([&] {
    void* data = nullptr;
    size_t size = 0;
    uint64_t loaded = 0;
    uint32_t skipped = 0;
    int rc = mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, &loaded, &skipped);
    const bool real_one = loaded == seq && skipped == 1 && size == sizeof payload && memcmp(data, payload, size) == 0;
    if (rc == MLOS_OK && !real_one) rc = 1;  // loaded, but not the real checkpoint after one skipped file
    mlos_checkpoint_free_data(data);
    return rc;
  });
  EXPECT_EQ(out.rfind("rc=0 ", 0), 0u) << out;
  // Only the FIFO left: none verifies, which is CHECKPOINT_CORRUPT.
  ASSERT_EQ(unlink(file_for(dir_, seq).c_str()), 0);
  const std::string none = in_child_with_timeout([&] {
    void* data = nullptr;
    size_t size = 0;
    return mlos_checkpoint_load_latest(dir_.c_str(), nullptr, &data, &size, nullptr, nullptr);
  });
  EXPECT_EQ(none.rfind("rc=" + std::to_string(MLOS_ERR_CHECKPOINT_CORRUPT) + " ", 0), 0u) << none;
}

TEST_F(CheckpointUntrustedFilesTest, PrefixesThatMakeHiddenFilesAreRefused) {
  for (const char* bad : {".", "..", ".model", "../up", "a/b"}) {
    mlos_checkpoint_options_t o{};
    o.struct_size = sizeof o;
    o.prefix = bad;
    mlos_checkpoint_writer_t* w = reinterpret_cast<mlos_checkpoint_writer_t*>(0x1);
    EXPECT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(mlos_last_error_message()).find("not starting with '.'"), std::string::npos) << bad;
    EXPECT_EQ(w, nullptr);
    if (w != nullptr && w != reinterpret_cast<mlos_checkpoint_writer_t*>(0x1)) mlos_checkpoint_writer_close(w);
    void* data = nullptr;
    size_t size = 0;
    EXPECT_EQ(mlos_checkpoint_load_latest(dir_.c_str(), bad, &data, &size, nullptr, nullptr),
              MLOS_ERR_INVALID_ARGUMENT)
        << bad;
  }
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{}) << "a refused open left a file (a hidden lock file?)";
  // A dot inside the prefix is still fine.
  mlos_checkpoint_options_t o{};
  o.struct_size = sizeof o;
  o.prefix = "model.v2";
  mlos_checkpoint_writer_t* w = nullptr;
  ASSERT_EQ(mlos_checkpoint_writer_open(dir_.c_str(), &o, &w), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(mlos_checkpoint_writer_close(w), MLOS_OK);
}
