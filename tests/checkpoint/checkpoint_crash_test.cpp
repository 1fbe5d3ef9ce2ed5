// SPDX-License-Identifier: Apache-2.0
// Crash safety: a child process (checkpoint_crash_child.c) saves
// checkpoints in a loop and acknowledges each finished save over a pipe; it
// is killed with SIGKILL after a random delay, again and again, on the same
// directory. After every kill the newest checkpoint must load and verify,
// hold exactly the payload of its sequence, and be either the last
// acknowledged one or the one after it; every final-named file must verify.
//
// MLOS_CHECKPOINT_CRASH_ITERATIONS sets the number of kills per variant
// (default 200; docs/checkpoints.md shows a longer run),
// MLOS_CHECKPOINT_CRASH_SEED the random seed (printed for reproduction).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mlos/checkpoint.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/crash_payload.h"
#include "integration/temp_dir.h"

namespace fs = std::filesystem;

namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  return v != nullptr && *v ? std::stoull(v) : fallback;
}

struct Round {
  std::vector<uint64_t> acks;
  int status = 0;
};

// Starts the child, kills it `delay` after it has opened its writer (or
// after it was started, when `during_startup`), and collects the sequences
// it acknowledged.
Round run_and_kill(const std::string& dir, const char* mode, std::chrono::microseconds delay, bool during_startup) {
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    execl(MLOS_CRASH_CHILD_PATH, MLOS_CRASH_CHILD_PATH, dir.c_str(), mode, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  Round r;
  uint64_t seq;
  // The child's first 8 bytes are 0, "writer open" (or nothing, if it died).
  if (!during_startup) (void)read(fds[0], &seq, sizeof seq);
  std::this_thread::sleep_for(delay);
  kill(pid, SIGKILL);
  waitpid(pid, &r.status, 0);
  // The pipe keeps what the child wrote before it died (8 bytes a save).
  while (read(fds[0], &seq, sizeof seq) == static_cast<ssize_t>(sizeof seq)) {
    if (seq != 0) r.acks.push_back(seq);
  }
  close(fds[0]);
  return r;
}

void crash_loop(const char* mode) {
  const uint64_t iterations = env_or("MLOS_CHECKPOINT_CRASH_ITERATIONS", 200);
  const uint64_t seed = env_or("MLOS_CHECKPOINT_CRASH_SEED", std::random_device{}());
  std::mt19937_64 rng(seed);
  // Up to 40 ms after the child opened its writer: from its first save to
  // several saves into its loop. One kill in eight counts from the child's
  // start instead, to hit the writer's open (stale-temporary removal).
  std::uniform_int_distribution<int> delay_us(0, 40000);
  std::uniform_int_distribution<int> one_in_eight(0, 7);
  mlos_test::TempDir temp("mlos-ckpt-crash");
  const std::string& dir = temp.path();
  ASSERT_FALSE(dir.empty()) << "cannot create a temp directory";
  std::vector<unsigned char> expected(CRASH_MAX_SIZE);

  uint64_t durable = 0;  // newest sequence known to be on disk
  uint64_t unacknowledged_found = 0, empty_rounds = 0, torn_temporaries = 0;
  size_t finals_before = 0;
  for (uint64_t i = 0; i < iterations && !::testing::Test::HasFailure(); ++i) {
    const bool during_startup = one_in_eight(rng) == 0;
    const Round r = run_and_kill(dir, mode, std::chrono::microseconds(delay_us(rng)), during_startup);
    SCOPED_TRACE("kill " + std::to_string(i) + ", seed " + std::to_string(seed));
    ASSERT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL)
        << "the child ended on its own (status " << r.status << "): it failed a save or could not start";
    for (size_t k = 0; k < r.acks.size(); ++k) {
      ASSERT_EQ(r.acks[k], r.acks.front() + k) << "acknowledgements skip or repeat";
    }
    if (!r.acks.empty()) {
      ASSERT_GE(r.acks.front(), durable + 1);
      durable = r.acks.back();
    } else {
      ++empty_rounds;
    }

    void* data = nullptr;
    size_t size = 0;
    uint64_t seq = 0;
    uint32_t skipped = 0;
    const int rc = mlos_checkpoint_load_latest(dir.c_str(), "crash", &data, &size, &seq, &skipped);
    if (durable == 0 && rc == MLOS_ERR_NOT_FOUND) continue;  // killed before the first save finished
    ASSERT_EQ(rc, MLOS_OK) << mlos_last_error_message();
    EXPECT_EQ(skipped, 0u) << "a final-named file failed verification";
    ASSERT_TRUE(seq == durable || seq == durable + 1) << "newest " << seq << ", last acknowledged " << durable;
    ASSERT_EQ(size, crash_payload_size(seq));
    crash_fill_payload(seq, expected.data());
    ASSERT_EQ(memcmp(data, expected.data(), size), 0) << "checkpoint " << seq << " holds the wrong bytes";
    mlos_checkpoint_free_data(data);
    if (seq == durable + 1) ++unacknowledged_found;  // renamed, killed before the acknowledgement
    durable = seq;

    size_t finals = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) ++torn_temporaries;
      if (name.size() < 9 || name.compare(name.size() - 9, 9, ".mlosckpt") != 0) continue;
      ++finals;
      EXPECT_EQ(mlos_checkpoint_verify_file(e.path().c_str(), nullptr, nullptr), MLOS_OK)
          << name << ": " << mlos_last_error_message();
    }
    // Retention runs before a save is acknowledged, so after an acknowledged
    // save there are keep_last (3) files plus at most one renamed by a save
    // killed before its retention. Rounds killed before any acknowledgement
    // can each leave one more (retention never runs at open: the newest
    // files there are not known to be good).
    const size_t allowed = r.acks.empty() ? finals_before + 1 : 4;
    EXPECT_LE(finals, allowed);
    finals_before = finals;
  }
  // The loop must have exercised real saves, not only start-up kills (a
  // loose bound: ctest runs other tests alongside, and sanitizers slow the
  // child down).
  EXPECT_GE(durable, iterations / 10) << "too few checkpoints were saved for the kills to mean much";
  std::printf("[ crash    ] %s: %llu kills, %llu checkpoints, %llu found unacknowledged, %llu left a torn "
              "temporary, %llu with no acknowledgement; seed %llu\n",
              mode, static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(durable),
              static_cast<unsigned long long>(unacknowledged_found), static_cast<unsigned long long>(torn_temporaries),
              static_cast<unsigned long long>(empty_rounds), static_cast<unsigned long long>(seed));
}

}  // namespace

TEST(CheckpointCrash, SyncSavesSurviveSigkill) { crash_loop("sync"); }

TEST(CheckpointCrash, AsyncSavesSurviveSigkill) { crash_loop("async"); }
