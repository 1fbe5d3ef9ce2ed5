// SPDX-License-Identifier: Apache-2.0
// The GPU share file: created by mlos run or mlosd, mapped by the job's
// processes (JobShare), read back by readers outside the job. The cap is
// the job's, across processes (a forked child's allocations count); a
// process killed with its memory held stops counting; a file of another
// format, size or with hostile contents is refused, not misread.
#include "gpushare/job_share.h"
#include "gpushare/share_config.h"
#include "gpushare/share_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace mlos::gpushare {
namespace {

const char* kUuid = "GPU-11111111-2222-3333-4444-555555555555";

bool always_alive(int, uint64_t) { return true; }

class ShareFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mlos-share-" + std::to_string(getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "job.share").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(ShareFileTest, CreatedFileHoldsTheLimitsAndNoProcesses) {
  ASSERT_EQ(create_share_file(path_, {1000, 40}), "");
  EXPECT_EQ(std::filesystem::status(path_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::string why;
  auto view = read_share_file(path_, &why, always_alive);
  ASSERT_TRUE(view) << why;
  EXPECT_EQ(view->limits.memory_limit, 1000u);
  EXPECT_EQ(view->limits.share_percent, 40);
  EXPECT_EQ(view->processes, 0);
  EXPECT_TRUE(view->devices.empty());
  // O_EXCL: never written over.
  EXPECT_NE(create_share_file(path_, {1, 1}), "");
  EXPECT_NE(create_share_file(path_ + "x", {0, 101}), "");
}

TEST_F(ShareFileTest, TheCapHoldsAcrossTheJobsProcesses) {
  ASSERT_EQ(create_share_file(path_, {1000, 0}), "");
  std::string why;
  auto share = JobShare::attach(path_, {}, &why);
  ASSERT_TRUE(share) << why;
  const int d = share->device(kUuid);
  ASSERT_EQ(d, 0);
  EXPECT_EQ(share->device(kUuid), 0);
  ASSERT_TRUE(share->reserve(d, 600));
  // A child process (a DataLoader worker, a torchrun rank) shares the cap.
  const pid_t child = fork();
  if (child == 0) {
    share->reattach_after_fork();
    const bool over = share->reserve(d, 500);
    const bool under = share->reserve(d, 400);
    _exit(!over && under ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The child exited without freeing its 400: it stops counting.
  EXPECT_TRUE(share->reserve(d, 400));
  EXPECT_FALSE(share->reserve(d, 1));
  share->release(d, 1000);
  EXPECT_EQ(share->job_used(d), 0u);

  auto view = read_share_file(path_, &why, process_alive);
  ASSERT_TRUE(view) << why;
  EXPECT_EQ(view->processes, 1);
  EXPECT_EQ(view->refused, 1u);  // the parent's; the dead child's are gone with it
  ASSERT_EQ(view->devices.size(), 1u);
  EXPECT_EQ(view->devices[0].uuid, kUuid);
}

TEST_F(ShareFileTest, ReadersCountOnlyLiveProcesses) {
  ASSERT_EQ(create_share_file(path_, {0, 0}), "");
  std::string why;
  auto share = JobShare::attach(path_, {}, &why);
  ASSERT_TRUE(share);
  const int d = share->device(kUuid);
  ASSERT_TRUE(share->reserve(d, 123));
  auto live = read_share_file(path_, &why, [](int, uint64_t) { return true; });
  auto dead = read_share_file(path_, &why, [](int, uint64_t) { return false; });
  ASSERT_TRUE(live && dead);
  EXPECT_EQ(live->devices[0].used, 123u);
  EXPECT_EQ(dead->devices[0].used, 0u);
  share.reset();  // a clean exit frees the slot
  auto after = read_share_file(path_, &why, always_alive);
  EXPECT_EQ(after->processes, 0);
}

TEST_F(ShareFileTest, ReadersOutsideTheJobReadOnlyTheJobUsersFile) {
  ASSERT_EQ(create_share_file(path_, {1, 1}), "");
  std::string why;
  const int me = static_cast<int>(geteuid());
  EXPECT_TRUE(read_share_file(path_, &why, always_alive, me)) << why;
  EXPECT_FALSE(read_share_file(path_, &why, always_alive, me + 1));
  EXPECT_EQ(why, path_ + ": not a GPU share file of the job's user") << "nothing said of whose it is";
  // Created for another user (a file made by root for a client): theirs only.
  if (geteuid() == 0) {
    const std::string theirs = path_ + ".theirs";
    ASSERT_EQ(create_share_file(theirs, {1, 1}, 65534, 65534), "");
    EXPECT_TRUE(read_share_file(theirs, &why, always_alive, 65534)) << why;
    EXPECT_FALSE(read_share_file(theirs, &why, always_alive, 0));
  }
}

// Issue 47, finding 6: a share file the job's user did not make alone
// (another user's, one others may write to, a second name of a file) is
// never mapped: its limits would be the other user's, its lock could hang
// the job, and glibc writes through the robust mutex's list pointers.
TEST_F(ShareFileTest, TheJobMapsOnlyItsUsersOwnShareFile) {
  ASSERT_EQ(create_share_file(path_, {1000, 0}), "");
  std::string why;
  auto processes = [&](const std::string& path) {
    auto view = read_share_file(path, &why, always_alive);
    return view ? view->processes : -1;
  };
  ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
  EXPECT_FALSE(JobShare::attach(path_, {}, &why));
  EXPECT_EQ(why, "GPU share file " + path_ + " is writable by group or others; refusing to map it");
  EXPECT_EQ(processes(path_), 0) << "no slot was taken in it";

  ASSERT_EQ(chmod(path_.c_str(), 0600), 0);
  const std::string second = (dir_ / "second-name").string();
  ASSERT_EQ(link(path_.c_str(), second.c_str()), 0);
  EXPECT_FALSE(JobShare::attach(path_, {}, &why));
  EXPECT_EQ(why, "GPU share file " + path_ + " has 2 links (a share file has one); refusing to map it");
  ASSERT_EQ(unlink(second.c_str()), 0);

  auto ours = JobShare::attach(path_, {}, &why);
  ASSERT_TRUE(ours) << why;
  EXPECT_EQ(ours->limits().memory_limit, 1000u);
  EXPECT_EQ(processes(path_), 1);
  ours.reset();

  if (geteuid() != 0) GTEST_SKIP() << "a file of another uid needs root to make";
  // Made by another user (nobody) with limits of theirs: even root, who
  // could open it, does not map it.
  const std::string theirs = (dir_ / "planted.share").string();
  ASSERT_EQ(create_share_file(theirs, {1u << 30, 0}, 65534, 65534), "");
  EXPECT_FALSE(JobShare::attach(theirs, {}, &why));
  EXPECT_EQ(why, "GPU share file " + theirs + " belongs to uid 65534, neither this user nor root; refusing to map it");
  EXPECT_EQ(processes(theirs), 0);
}

// Issue 47, finding 10: mlosd resolves, as root, a share path a client
// sent, under directories the client may not search. Missing or there
// but not the client's, the answer is the same bytes.
TEST_F(ShareFileTest, ARefusedPathGetsOneAnswerWhateverIsThere) {
  const std::filesystem::path closed = dir_ / "closed";  // as /root: only its owner searches it
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  const std::string path = (closed / "x.share").string();
  const int client = static_cast<int>(geteuid()) + 1;
  std::string missing;
  ASSERT_FALSE(read_share_file(path, &missing, always_alive, client));
  EXPECT_EQ(missing, path + ": not a GPU share file of the job's user");
  std::string why;
  ASSERT_EQ(create_share_file(path, {1, 1}), "");  // a share file, but not the client's
  EXPECT_FALSE(read_share_file(path, &why, always_alive, client));
  EXPECT_EQ(why, missing);
  ASSERT_EQ(unlink(path.c_str()), 0);
  std::ofstream(path) << "anything else";
  EXPECT_FALSE(read_share_file(path, &why, always_alive, client));
  EXPECT_EQ(why, missing);
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  EXPECT_FALSE(read_share_file(path, &why, always_alive, client));
  EXPECT_EQ(why, missing);
  ASSERT_EQ(rmdir(path.c_str()), 0);
  std::filesystem::create_symlink("/etc/shadow", path);
  EXPECT_FALSE(read_share_file(path, &why, always_alive, client));
  EXPECT_EQ(why, missing);
}

TEST_F(ShareFileTest, PrivateBooksWithoutAFile) {
  std::string why;
  auto share = JobShare::attach("", {100, 0}, &why);
  ASSERT_TRUE(share) << why;
  EXPECT_EQ(share->limits().memory_limit, 100u);
  const int d = share->device(kUuid);
  EXPECT_TRUE(share->reserve(d, 100));
  EXPECT_FALSE(share->reserve(d, 1));
}

TEST_F(ShareFileTest, TheDeviceTableIsBounded) {
  std::string why;
  auto share = JobShare::attach("", {100, 0}, &why);
  for (int i = 0; i < kMaxShareDevices; ++i) EXPECT_EQ(share->device("GPU-" + std::to_string(i)), i);
  EXPECT_EQ(share->device("GPU-one-too-many"), -1);
  EXPECT_NE(share->why().find("not capped"), std::string::npos);
  EXPECT_TRUE(share->reserve(-1, 1u << 30));  // uncapped, never refused
  EXPECT_EQ(share->device(std::string(kShareUuidSize, 'x')), -1);
}

TEST_F(ShareFileTest, FilesOfAnotherShapeAreRefused) {
  std::string why;
  EXPECT_FALSE(read_share_file(path_, &why, always_alive));
  EXPECT_EQ(why, path_ + ": not a GPU share file of the job's user") << "missing: the one answer";
  EXPECT_FALSE(JobShare::attach(path_, {}, &why));
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;  // the job's own process is told
  std::ofstream(path_) << "not a share file";
  EXPECT_FALSE(read_share_file(path_, &why, always_alive));
  EXPECT_NE(why.find("not a GPU share file of the job's user"), std::string::npos);
  EXPECT_FALSE(JobShare::attach(path_, {}, &why));
  // A terminal, a FIFO: never opened (O_PATH), refused like any non-file.
  EXPECT_FALSE(read_share_file("/dev/tty", &why, always_alive, 0));
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(read_share_file(fifo, &why, always_alive, -1));  // would block an O_RDONLY open
  EXPECT_EQ(why, fifo + ": not a GPU share file of the job's user");

  // A link is not followed: mlosd reads as root.
  const std::string link = (dir_ / "link").string();
  std::filesystem::remove(path_);
  ASSERT_EQ(create_share_file(path_, {1, 1}), "");
  std::filesystem::create_symlink(path_, link);
  EXPECT_FALSE(read_share_file(link, &why, always_alive));
  EXPECT_FALSE(JobShare::attach(link, {}, &why));

  // Another version, and hostile contents written by the job itself.
  auto patch = [&](size_t offset, const void* bytes, size_t n) {
    const int fd = open(path_.c_str(), O_WRONLY);
    ASSERT_EQ(pwrite(fd, bytes, n, static_cast<off_t>(offset)), static_cast<ssize_t>(n));
    close(fd);
  };
  const uint32_t version = 99;
  patch(offsetof(ShareHeader, version), &version, sizeof version);
  EXPECT_FALSE(read_share_file(path_, &why, always_alive));
  EXPECT_NE(why.find("another format"), std::string::npos);
  EXPECT_FALSE(JobShare::attach(path_, {}, &why));
  const uint32_t ours = kShareFileVersion;
  patch(offsetof(ShareHeader, version), &ours, sizeof ours);
  const uint32_t share = 250;
  patch(offsetof(ShareHeader, share_percent), &share, sizeof share);
  EXPECT_FALSE(read_share_file(path_, &why, always_alive));
  const uint32_t fine = 50;
  patch(offsetof(ShareHeader, share_percent), &fine, sizeof fine);
  ASSERT_TRUE(read_share_file(path_, &why, always_alive)) << why;
  const char unterminated[kShareUuidSize] = {'G', 'P', 'U', '\x1b', '[', '2', 'J'};
  patch(offsetof(ShareFileLayout, devices), unterminated, sizeof unterminated);
  EXPECT_FALSE(read_share_file(path_, &why, always_alive));
  EXPECT_NE(why.find("invalid device entry"), std::string::npos);
}

TEST(ShareConfig, ParsesWhatMlosRunSets) {
  ShareConfig c;
  std::string why;
  ASSERT_TRUE(parse_share_config("/run/x", "1073741824", "50", nullptr, &c, &why));
  EXPECT_EQ(c.state_path, "/run/x");
  EXPECT_EQ(c.limits.memory_limit, 1073741824u);
  EXPECT_EQ(c.limits.share_percent, 50);
  EXPECT_TRUE(c.throttle_launches);
  ASSERT_TRUE(parse_share_config(nullptr, nullptr, "50", "mps", &c, &why));
  EXPECT_FALSE(c.throttle_launches);
  EXPECT_EQ(c.state_path, "");
  ASSERT_TRUE(parse_share_config("", "", "", "", &c, &why));
  EXPECT_EQ(c.limits.memory_limit, 0u);
}

TEST(ShareConfig, RefusesBadValues) {
  ShareConfig c;
  std::string why;
  EXPECT_FALSE(parse_share_config(nullptr, "1G", nullptr, nullptr, &c, &why));
  EXPECT_NE(why.find("MLOS_GPU_MEMORY_LIMIT"), std::string::npos);
  EXPECT_FALSE(parse_share_config(nullptr, "-5", nullptr, nullptr, &c, &why));
  EXPECT_FALSE(parse_share_config(nullptr, "99999999999999999999999", nullptr, nullptr, &c, &why));
  for (const char* share : {"0", "101", "50%", "x"}) {
    EXPECT_FALSE(parse_share_config(nullptr, nullptr, share, nullptr, &c, &why)) << share;
    EXPECT_NE(why.find("MLOS_GPU_SHARE"), std::string::npos);
  }
  EXPECT_FALSE(parse_share_config(nullptr, nullptr, "50", "magic", &c, &why));
  EXPECT_NE(why.find("MLOS_GPU_SHARE_MECHANISM"), std::string::npos);
}

}  // namespace
}  // namespace mlos::gpushare
