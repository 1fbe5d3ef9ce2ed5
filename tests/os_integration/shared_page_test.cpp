// SPDX-License-Identifier: Apache-2.0
// A phase page in a sealed memfd, written by one process and read by
// another through the inherited descriptor.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/phase_page.h"
#include "integration/proc_observer.h"
#include "os/shared_page.h"

using namespace mlos_test;

TEST(SharedPage, ChildPublishesParentReads) {
  auto page = mlos::os::SharedPage::create("mlos-phase-test");
  ASSERT_TRUE(page.ok()) << page.error().describe();
  // Visible from outside as a memfd with our name.
  char link[256] = {};
  ASSERT_GT(readlink(("/proc/self/fd/" + std::to_string(page->fd())).c_str(), link, sizeof link - 1), 0);
  EXPECT_EQ(std::string(link).rfind("/memfd:mlos-phase-test", 0), 0u) << link;
  // Sealed: it can no longer grow or shrink.
  EXPECT_NE(ftruncate(page->fd(), 8192), 0);

  mlos::PhasePageWriter init(page->data(), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    mlos::PhasePageWriter w(page->data(), 0);
    for (uint64_t i = 1; i <= 1000; ++i) {
      w.publish(i % 2 ? MLOS_TRAINING_PHASE_FORWARD : MLOS_TRAINING_PHASE_BACKWARD, i * 10);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));

  auto ro = mlos::os::SharedPage::map_readonly(page->fd());
  ASSERT_TRUE(ro.ok()) << ro.error().describe();
  auto s = mlos::PhasePageReader(ro->data()).read();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->set_phase_calls, 1000u);
  EXPECT_EQ(s->phase, MLOS_TRAINING_PHASE_BACKWARD);
  EXPECT_EQ(s->entries[MLOS_TRAINING_PHASE_FORWARD], 500u);
  EXPECT_EQ(s->entries[MLOS_TRAINING_PHASE_BACKWARD], 500u);
  EXPECT_EQ(s->entered_ns, 10000u);
}

TEST(SharedPage, TooSmallDescriptorIsRefused) {
  int fd = memfd_create("small", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 100), 0);
  auto ro = mlos::os::SharedPage::map_readonly(fd);
  EXPECT_FALSE(ro.ok());
  EXPECT_EQ(ro.error().code, MLOS_ERR_INVALID_ARGUMENT);
  close(fd);
}
