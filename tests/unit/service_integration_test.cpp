// SPDX-License-Identifier: Apache-2.0
// The systemd side of mlosd, in-process: sd_notify messages sent to a fake
// NOTIFY_SOCKET (a datagram socket this test binds), the watchdog's
// keep-alive pacing, JOURNAL_STREAM detection and journal field names.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "os/journal_log.h"
#include "os/service_notify.h"

namespace mlos::os {
namespace {

// A datagram socket standing in for systemd's notification socket, and
// the environment that points sd_notify at it; restored at the end.
class FakeNotifySocket : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mlos-notify-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/notify";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
  }
  void TearDown() override {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  // Every datagram received so far.
  std::vector<std::string> received() {
    std::vector<std::string> out;
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n < 0) return out;
      out.emplace_back(buf, static_cast<size_t>(n));
    }
  }
  std::string dir_, path_;
  int fd_ = -1;
};

TEST_F(FakeNotifySocket, ReadyStatusReloadingAndStoppingReachTheSocket) {
  const ServiceNotifier n = ServiceNotifier::from_environment();
  ASSERT_TRUE(n.enabled());
  EXPECT_FALSE(n.watchdog_usec().has_value());
  n.ready("ready on /run/x\nsecond line");
  n.reloading();
  n.stopping("Terminated, stopping");
  const auto got = received();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "READY=1\nSTATUS=ready on /run/x second line");  // one line: a newline would start a field
  EXPECT_EQ(got[1].rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << got[1];
  EXPECT_EQ(got[2], "STOPPING=1\nSTATUS=Terminated, stopping");
}

TEST_F(FakeNotifySocket, KeepAlivesComeEveryHalfPeriod) {
  setenv("WATCHDOG_USEC", "2000000", 1);
  ServiceNotifier n = ServiceNotifier::from_environment();
  ASSERT_EQ(n.watchdog_usec(), 2000000u);
  // The clock is the caller's: 0.1 s ticks for 3 s of it.
  for (uint64_t t = 1000000; t <= 4000000; t += 100000) n.keep_alive(t);
  const auto got = received();
  ASSERT_EQ(got.size(), 4u);  // at 1.0, 2.0, 3.0 and 4.0 s
  for (const auto& m : got) EXPECT_EQ(m, "WATCHDOG=1");
}

TEST_F(FakeNotifySocket, WatchdogForAnotherProcessIsNotOurs) {
  setenv("WATCHDOG_USEC", "2000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  EXPECT_FALSE(ServiceNotifier::from_environment().watchdog_usec().has_value());
  unsetenv("WATCHDOG_PID");
}

TEST(ServiceNotifierTest, WithoutNotifySocketEverythingIsANoOp) {
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  ServiceNotifier n = ServiceNotifier::from_environment();
  EXPECT_FALSE(n.enabled());
  n.ready("x");
  n.keep_alive(1);
}

TEST(JournalLogTest, StderrIsTheJournalStreamOnlyWhenDeviceAndInodeMatch) {
  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderr_is_journal_stream());
  const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(stderr_is_journal_stream());
  setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str(), 1);
  EXPECT_FALSE(stderr_is_journal_stream());  // a stream inherited from a parent, not ours
  setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(stderr_is_journal_stream());
  unsetenv("JOURNAL_STREAM");
}

TEST(JournalLogTest, FieldNamesFollowJournaldsRule) {
  for (const char* ok : {"JOB_ID", "UID", "MLOS_EVENT", "A1"}) EXPECT_TRUE(valid_journal_field_name(ok)) << ok;
  for (const char* bad : {"", "_PID", "job_id", "1A", "A-B", "A B"}) EXPECT_FALSE(valid_journal_field_name(bad)) << bad;
  EXPECT_FALSE(valid_journal_field_name(std::string(65, 'A')));
}

TEST(JournalLogTest, PrioritiesAreSyslogs) {
  EXPECT_EQ(syslog_priority(MLOS_LOG_ERROR), 3);
  EXPECT_EQ(syslog_priority(MLOS_LOG_WARN), 4);
  EXPECT_EQ(syslog_priority(MLOS_LOG_INFO), 6);
  EXPECT_EQ(syslog_priority(MLOS_LOG_DEBUG), 7);
}

TEST(JournalLogTest, MessagesWithFieldsReadOnOneLine) {
  EXPECT_EQ(message_with_fields("granted", {{"JOB_ID", "7"}, {"UID", "0"}}), "granted [JOB_ID=7 UID=0]");
  EXPECT_EQ(message_with_fields("plain", {}), "plain");
}

}  // namespace
}  // namespace mlos::os
