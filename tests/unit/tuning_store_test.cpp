// SPDX-License-Identifier: Apache-2.0
// The per-command store of mlos run's tuning (src/tune/tuning_store.h) and
// where allocators are found (src/tune/allocator_library.h).
#include "tune/tuning_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "tune/allocator_library.h"
#include "tune/launch_candidates.h"

namespace mlos::tune {
namespace {

class TuningStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/tune-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { (void)!system(("rm -rf '" + root_ + "'").c_str()); }
  std::string root_;
};

TEST_F(TuningStoreTest, TheKeyNamesArgvDirectoryAndCpuCount) {
  const std::string k = command_key({"python", "train.py"}, "/a", 2);
  EXPECT_EQ(k.size(), 16u);
  EXPECT_EQ(k, command_key({"python", "train.py"}, "/a", 2));
  EXPECT_NE(k, command_key({"python", "train.py"}, "/b", 2));
  EXPECT_NE(k, command_key({"python", "train.py"}, "/a", 1));
  EXPECT_NE(k, command_key({"python", "train.py", "--lr"}, "/a", 2));
  EXPECT_NE(command_key({"ab", "c"}, "/a", 2), command_key({"a", "bc"}, "/a", 2));
}

TEST_F(TuningStoreTest, StartsAndStepTimesComeBackPerCandidate) {
  auto store = TuningStore::open(root_ + "/store");
  ASSERT_TRUE(store) << store.error().describe();
  struct stat st {};
  ASSERT_EQ(stat((root_ + "/store").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string key = command_key({"python"}, "/", 1);
  EXPECT_TRUE(store->records(key).empty());
  ASSERT_TRUE(store->describe(key, {"python"}, "/"));
  ASSERT_TRUE(store->note_start(key, "tcmalloc"));
  ASSERT_TRUE(store->note_start(key, "tcmalloc"));
  ASSERT_TRUE(append_line(store->evidence_path(key, "tcmalloc"), R"({"steps":10,"step_ms":12.5})"));
  ASSERT_TRUE(store->note_start(key, "glibc"));
  auto r = store->records(key);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r["tcmalloc"].runs_started, 2);
  EXPECT_EQ(r["tcmalloc"].step_ms, std::vector<double>{12.5});
  EXPECT_EQ(r["glibc"].runs_started, 1);
  EXPECT_TRUE(r["glibc"].step_ms.empty());
}

TEST_F(TuningStoreTest, TornAndForeignLinesAreSkipped) {
  auto store = TuningStore::open(root_);
  ASSERT_TRUE(store);
  const std::string key = "0123456789abcdef";
  ASSERT_TRUE(store->describe(key, {"x"}, "/"));
  std::ofstream(store->evidence_path(key, "glibc"))
      << "{\"started\":1}\nnot json\n{\"step_ms\":-3}\n{\"step_ms\":\"7\"}\n[1]\n{\"step_ms\":4}\n{\"step_ms\":5";
  auto r = store->records(key);
  EXPECT_EQ(r["glibc"].runs_started, 1);
  EXPECT_EQ(r["glibc"].step_ms, std::vector<double>{4.0});
}

TEST_F(TuningStoreTest, AStoreOthersMayWriteIsRefused) {
  ASSERT_EQ(chmod(root_.c_str(), 0777), 0);
  auto store = TuningStore::open(root_);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, MLOS_ERR_PERMISSION);
  EXPECT_FALSE(TuningStore::open("relative/dir"));
}

TEST_F(TuningStoreTest, AppendingNeverFollowsALink) {
  ASSERT_EQ(symlink("/dev/null", (root_ + "/link").c_str()), 0);
  EXPECT_FALSE(append_line(root_ + "/link", "x"));
}

TEST_F(TuningStoreTest, AllocatorsAreFoundByTheirDebianSonames) {
  const std::string lib = root_ + "/lib";
  ASSERT_EQ(mkdir(lib.c_str(), 0755), 0);
  EXPECT_FALSE(find_allocator("tcmalloc", {lib}));
  std::ofstream(lib + "/libjemalloc.so.2") << "";
  EXPECT_EQ(find_allocator("jemalloc", {"/nonexistent", lib}), lib + "/libjemalloc.so.2");
  EXPECT_FALSE(find_allocator("tcmalloc", {lib}));
  EXPECT_FALSE(find_allocator("mimalloc", {lib}));
  EXPECT_EQ(allocator_package("tcmalloc"), "libtcmalloc-minimal4");
}

TEST_F(TuningStoreTest, SearchDirectoriesComeFromTheEnvironmentOrLibc) {
  setenv("MLOS_ALLOCATOR_DIRS", "/x:/y::/x", 1);
  EXPECT_EQ(allocator_search_dirs(), (std::vector<std::string>{"/x", "/y"}));
  unsetenv("MLOS_ALLOCATOR_DIRS");
  const auto dirs = allocator_search_dirs();
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(access((dirs.front() + "/libc.so.6").c_str(), F_OK), 0) << dirs.front();
}

TEST_F(TuningStoreTest, PreloadedAllocatorsAreRecognised) {
  EXPECT_TRUE(preloads_an_allocator("/usr/lib/libtcmalloc_minimal.so.4"));
  EXPECT_TRUE(preloads_an_allocator("/a/libfoo.so:/b/libjemalloc.so.2"));
  EXPECT_FALSE(preloads_an_allocator("/a/libfoo.so"));
}

TEST_F(TuningStoreTest, CommandsAreClassedByInterpreter) {
  EXPECT_EQ(classify_command({"python3", "x.py"}), CommandKind::kPython);
  EXPECT_EQ(classify_command({"/opt/venv/bin/python", "x.py"}), CommandKind::kPython);
  EXPECT_EQ(classify_command({"torchrun", "x.py"}), CommandKind::kPython);
  EXPECT_EQ(classify_command({"sleep", "1"}), CommandKind::kOther);
  EXPECT_EQ(classify_command({}), CommandKind::kOther);
  const std::string script = root_ + "/train";
  std::ofstream(script) << "#!/usr/bin/env python3\nprint(1)\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  EXPECT_EQ(classify_command({script}), CommandKind::kPython);
  EXPECT_EQ(candidates_for(CommandKind::kPython).front().name, "tcmalloc");
  EXPECT_EQ(candidates_for(CommandKind::kOther).front().name, "glibc");
}

// The OpenMP wait policy is tried only for Python commands, on the
// default allocator, right after it.
TEST_F(TuningStoreTest, PythonCommandsAlsoTryPassiveOpenMpThreads) {
  const auto python = candidates_for(CommandKind::kPython);
  ASSERT_GE(python.size(), 2u);
  EXPECT_EQ(python[1].name, "tcmalloc+omp-passive");
  EXPECT_EQ(python[1].allocator, "tcmalloc");
  const std::vector<std::pair<std::string, std::string>> passive{{"OMP_WAIT_POLICY", "passive"}};
  EXPECT_EQ(python[1].env, passive);
  for (const auto& c : candidates_for(CommandKind::kOther)) {
    for (const auto& [name, value] : c.env) EXPECT_NE(name, "OMP_WAIT_POLICY") << c.name;
  }
}

}  // namespace
}  // namespace mlos::tune
