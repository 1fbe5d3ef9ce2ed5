// SPDX-License-Identifier: Apache-2.0
// Closing all descriptors but some, by close_range and by the /proc/self/fd
// listing used on kernels without it: checked from the parent, which lists
// /proc/<child>/fd while the child waits.
#include "os/close_descriptors.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "os_integration/sandboxed_child.h"

using mlos_test::hear;
using mlos_test::SandboxedChild;
using mlos_test::say;

namespace {

std::set<int> open_descriptors(pid_t pid) {
  std::set<int> fds;
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return {-1};
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
  }
  closedir(dir);
  return fds;
}

void expect_only_kept(mlos::Status (*close_fn)(const std::vector<int>&)) {
  SandboxedChild child([close_fn](int sock) {
    int pipe_fds[2];
    if (open("/dev/null", O_RDONLY) < 0 || pipe(pipe_fds) != 0 || dup2(pipe_fds[0], 0) != 0 ||
        dup2(pipe_fds[1], 50) != 50 || open("/dev/null", O_RDONLY) < 0) {
      return 9;
    }
    mlos::Status s = close_fn({50, sock, 0, -3, 50});  // unsorted, repeated, negative: all fine
    say(sock, s ? std::to_string(sock) : "error " + s.error().describe());
    hear(sock);
    return 0;
  });
  std::string line = child.read_line();
  ASSERT_FALSE(line.empty() || line[0] == 'e') << line;
  EXPECT_EQ(open_descriptors(child.pid()), (std::set<int>{0, std::stoi(line), 50}));
  child.send("go");
}

}  // namespace

TEST(CloseDescriptors, CloseRangeLeavesOnlyTheKeptOnes) { expect_only_kept(mlos::os::close_descriptors_except); }

TEST(CloseDescriptors, ProcListingLeavesOnlyTheKeptOnes) {
  expect_only_kept(mlos::os::close_descriptors_except_by_listing);
}
