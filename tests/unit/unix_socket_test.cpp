// SPDX-License-Identifier: Apache-2.0
// listen_unix: the path appears only once the socket listens (bound under
// a staged name and renamed in), stale sockets are replaced, and anything
// that is not a socket is refused and left as it was.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "os/unix_socket.h"

namespace mlos::os {
namespace {

class UnixSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/mlos-unix-socket-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/d.sock";
  }
  void TearDown() override {
    unlink(path_.c_str());
    unlink((path_ + ".new").c_str());
    rmdir(dir_.c_str());
  }
  // A socket file at `path` that nothing accepts on (its socket closed).
  static void leave_stale_socket(const std::string& path) {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    close(fd);
  }
  std::string dir_, path_;
};

TEST_F(UnixSocketTest, ThePathIsAListeningSocketWithItsModeAndNothingStagedIsLeft) {
  auto listener = listen_unix(path_, 0600);
  ASSERT_TRUE(listener.ok()) << listener.error().describe();
  struct stat st{};
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(lstat((path_ + ".new").c_str(), &st), 0) << "the staged name was renamed away";
  // Listening already: a connect queues in the backlog (no accept needed).
  EXPECT_TRUE(connect_unix(path_).ok());
}

TEST_F(UnixSocketTest, StaleSocketsAtThePathAndTheStagedNameAreReplaced) {
  leave_stale_socket(path_);
  leave_stale_socket(path_ + ".new");
  auto listener = listen_unix(path_, 0600);
  ASSERT_TRUE(listener.ok()) << listener.error().describe();
  EXPECT_TRUE(connect_unix(path_).ok());
}

TEST_F(UnixSocketTest, ALiveSocketIsAddressInUse) {
  auto first = listen_unix(path_, 0600);
  ASSERT_TRUE(first.ok());
  auto second = listen_unix(path_, 0600);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().sys_errno, EADDRINUSE);
  EXPECT_TRUE(connect_unix(path_).ok()) << "the first daemon's socket is untouched";
}

TEST_F(UnixSocketTest, AFileThatIsNotASocketIsRefusedAndLeftAsItWas) {
  for (const std::string& where : {path_, path_ + ".new"}) {
    { std::ofstream(where) << "keep me"; }
    auto listener = listen_unix(path_, 0600);
    EXPECT_FALSE(listener.ok()) << where;
    std::ifstream in(where);
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "keep me") << where;
    unlink(where.c_str());
  }
  struct stat st{};
  EXPECT_NE(lstat(path_.c_str(), &st), 0) << "no socket appeared at the path";
}

}  // namespace
}  // namespace mlos::os
