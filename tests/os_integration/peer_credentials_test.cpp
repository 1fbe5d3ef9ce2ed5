// SPDX-License-Identifier: Apache-2.0
// SO_PEERCRED names the connecting process and user as the kernel saw them:
// a child that became user nobody is seen as nobody, with its own pid.
#include "os/peer_credentials.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

TEST(PeerCredentials, AcceptedConnectionNamesTheConnectingUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  char dir[] = "/tmp/mlos-cred-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  chmod(dir, 0755);
  const std::string path = std::string(dir) + "/s.sock";
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  chmod(path.c_str(), 0666);
  ASSERT_EQ(listen(listener, 1), 0);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(3);
    char c;
    (void)!read(s, &c, 1);  // hold the connection until the parent is done
    _exit(0);
  }
  int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(conn, 0);
  auto cred = mlos::os::peer_credentials(conn);
  ASSERT_TRUE(cred.ok()) << cred.error().describe();
  EXPECT_EQ(cred->pid, child);
  EXPECT_EQ(cred->uid, 65534u);
  EXPECT_EQ(cred->gid, 65534u);
  close(conn);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  EXPECT_EQ(mlos::os::peer_credentials(listener).ok(), true);  // a listener reports its own creator
  EXPECT_FALSE(mlos::os::peer_credentials(-1).ok());
  close(listener);
  std::filesystem::remove_all(dir);
}
