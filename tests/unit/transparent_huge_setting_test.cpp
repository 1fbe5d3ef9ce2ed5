// SPDX-License-Identifier: Apache-2.0
// Which THP setting governs a tensor pool's arena, read from a fixture
// sysfs tree: the per-size file unless it says "inherit".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "os/memory_arena.h"

namespace fs = std::filesystem;
using mlos::os::transparent_huge_advisable;
using mlos::os::transparent_huge_setting;

namespace {
void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}
}  // namespace

TEST(TransparentHugeSetting, PerSizeWinsUnlessInherit) {
  const fs::path root = fs::temp_directory_path() / ("thp-fixture-" + std::to_string(getpid()));
  write(root / "enabled", "always [madvise] never");
  write(root / "shmem_enabled", "always within_size advise [never] deny force");
  write(root / "hugepages-2048kB/enabled", "always [inherit] madvise never");
  write(root / "hugepages-2048kB/shmem_enabled", "always [inherit] within_size advise never");
  EXPECT_EQ(transparent_huge_setting(root, false), "madvise");
  EXPECT_EQ(transparent_huge_setting(root, true), "never");
  write(root / "hugepages-2048kB/shmem_enabled", "always inherit within_size [advise] never");
  EXPECT_EQ(transparent_huge_setting(root, true), "advise");
  fs::remove_all(root);
  EXPECT_EQ(transparent_huge_setting(root, true), "");  // no sysfs: nothing advisable
}

TEST(TransparentHugeSetting, AdvisableSettings) {
  EXPECT_TRUE(transparent_huge_advisable("madvise", false));
  EXPECT_TRUE(transparent_huge_advisable("always", false));
  EXPECT_FALSE(transparent_huge_advisable("never", false));
  EXPECT_FALSE(transparent_huge_advisable("advise", false));
  EXPECT_TRUE(transparent_huge_advisable("advise", true));
  EXPECT_TRUE(transparent_huge_advisable("within_size", true));
  EXPECT_FALSE(transparent_huge_advisable("deny", true));
  EXPECT_FALSE(transparent_huge_advisable("", true));
}
