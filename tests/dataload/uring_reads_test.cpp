// SPDX-License-Identifier: Apache-2.0
// io_uring reads on the real kernel: many reads in flight return the
// files' bytes; a file that ends early is reported, not padded; a bad
// descriptor fails its own read only; and the ring refuses any operation
// but a read (its restriction). Skipped, saying why, where the kernel
// refuses io_uring.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "dataload/temp_dir.h"
#include "dataload/uring_reads.h"
#include "os/unique_fd.h"

using namespace mlos::dataload;
using mlos::dataload::testing::TempDir;

namespace {

std::unique_ptr<UringReads> make_ring(unsigned depth) {
  auto ring = UringReads::create(depth);
  if (!ring) return nullptr;
  return std::move(*ring);
}

// Waits until every request in `pending` came back.
void drain(UringReads& ring, size_t pending) {
  while (pending > 0) {
    auto done = ring.wait();
    ASSERT_TRUE(done) << done.error().message;
    pending -= done->size();
  }
}

}  // namespace

TEST(UringReads, ManyReadsInFlightReturnEachFilesBytes) {
  auto ring = make_ring(8);
  if (!ring) GTEST_SKIP() << UringReads::create(8).error().message;
  TempDir dir;
  std::vector<std::string> contents;
  std::vector<mlos::os::UniqueFd> fds;
  for (int i = 0; i < 20; ++i) {
    contents.push_back(std::string(1000 + 4099 * i, static_cast<char>('a' + i)));
    const std::string path = dir / ("f" + std::to_string(i));
    std::ofstream(path, std::ios::binary) << contents.back();
    fds.emplace_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  std::vector<std::vector<uint8_t>> buffers(contents.size());
  std::vector<UringReads::Request> requests(contents.size());
  size_t next = 0, pending = 0;
  while (next < requests.size() || pending > 0) {
    while (next < requests.size() && ring->in_flight() < ring->depth()) {
      buffers[next].resize(contents[next].size() - 10);
      requests[next] = {fds[next].get(), 10, buffers[next].data(), buffers[next].size(), 0, 0, nullptr};
      ring->start(&requests[next++]);
      ++pending;
    }
    auto done = ring->wait();
    ASSERT_TRUE(done) << done.error().message;
    for (UringReads::Request* r : *done) {
      EXPECT_EQ(r->error, 0);
      EXPECT_EQ(r->done, r->length);
    }
    pending -= done->size();
  }
  for (size_t i = 0; i < contents.size(); ++i) {
    EXPECT_EQ(std::string(buffers[i].begin(), buffers[i].end()), contents[i].substr(10)) << i;
  }
}

TEST(UringReads, AFileThatEndsEarlyOrABadDescriptorFailsOnlyItsOwnRead) {
  auto ring = make_ring(4);
  if (!ring) GTEST_SKIP() << UringReads::create(4).error().message;
  TempDir dir;
  std::ofstream(dir / "short", std::ios::binary) << std::string(100, 'x');
  std::ofstream(dir / "whole", std::ios::binary) << std::string(100, 'y');
  mlos::os::UniqueFd short_fd(::open((dir / "short").c_str(), O_RDONLY | O_CLOEXEC));
  mlos::os::UniqueFd whole_fd(::open((dir / "whole").c_str(), O_RDONLY | O_CLOEXEC));
  std::vector<uint8_t> a(200), b(100), c(10);
  UringReads::Request truncated{short_fd.get(), 0, a.data(), a.size(), 0, 0, nullptr};
  UringReads::Request whole{whole_fd.get(), 0, b.data(), b.size(), 0, 0, nullptr};
  UringReads::Request closed{999, 0, c.data(), c.size(), 0, 0, nullptr};
  ring->start(&truncated);
  ring->start(&whole);
  ring->start(&closed);
  drain(*ring, 3);
  EXPECT_EQ(truncated.error, -1);  // the file ended after 100 of 200 bytes
  EXPECT_EQ(truncated.done, 100u);
  EXPECT_EQ(whole.error, 0);
  EXPECT_EQ(std::string(b.begin(), b.end()), std::string(100, 'y'));
  EXPECT_EQ(closed.error, EBADF);
  EXPECT_EQ(ring->in_flight(), 0u);
}

TEST(UringReads, TheRingRefusesEveryOperationButRead) {
  auto ring = make_ring(2);
  if (!ring) GTEST_SKIP() << UringReads::create(2).error().message;
  EXPECT_EQ(ring->probe_nop(), -EACCES);
}

TEST(UringReads, ALocalFileIsReadWithoutWorkers) {
  TempDir dir;
  // tmpfs, ext4, xfs and btrfs all answer RWF_NOWAIT; FUSE and overlayfs
  // (a container's or a chroot's root) do not (bench/dataload/slow_storage.py
  // is one to try by hand): on those this test has nothing to say.
  struct statfs fs{};
  ASSERT_EQ(::statfs(dir.path().c_str(), &fs), 0);
  const std::set<long> answering{0x01021994 /* tmpfs */, 0xEF53 /* ext2/3/4 */, 0x58465342 /* xfs */,
                                 0x9123683E /* btrfs */};
  if (!answering.count(static_cast<long>(fs.f_type))) {
    GTEST_SKIP() << dir.path() << " is on a file system of type 0x" << std::hex << fs.f_type
                 << ", not one known to answer RWF_NOWAIT";
  }
  std::ofstream(dir / "local", std::ios::binary) << "bytes";
  mlos::os::UniqueFd fd(::open((dir / "local").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_FALSE(UringReads::blocks_inline(fd.get()));
}

TEST(UringReads, ADepthOfZeroIsRefused) {
  auto ring = UringReads::create(0);
  ASSERT_FALSE(ring);
  EXPECT_EQ(ring.error().code, MLOS_ERR_INVALID_ARGUMENT);
}
