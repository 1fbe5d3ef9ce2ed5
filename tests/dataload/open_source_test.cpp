// SPDX-License-Identifier: Apache-2.0
// open_source: one string picks the image folder, list file or shards.
#include <gtest/gtest.h>

#include "dataload/sample_source.h"
#include "dataload/tar_builder.h"
#include "dataload/temp_dir.h"

namespace mlos::dataload {
namespace {

using testing::TarBuilder;
using testing::TempDir;
using testing::write_file;

TEST(OpenSource, PicksTheLayoutFromTheSpec) {
  TempDir tmp;
  write_file(tmp / "folder/cls/a.jpg", "A");
  write_file(tmp / "list.txt", "folder/cls/a.jpg\t4\n");
  const std::string shard = TarBuilder().add("k.jpg", "K").add("k.cls", "6").end().bytes();
  write_file(tmp / "shards/s-0.tar", shard);
  write_file(tmp / "shards/s-1.tar", shard);
  write_file(tmp / "single.tar", shard);

  auto folder = open_source(tmp / "folder");
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  EXPECT_EQ((*folder)->class_names(), std::vector<std::string>{"cls"});
  EXPECT_EQ((*folder)->label(0), 0);

  auto list = open_source(tmp / "list.txt");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ((*list)->label(0), 4);

  for (const std::string& spec : {tmp / "shards/s-{0..1}.tar", tmp / "shards/*.tar", tmp / "shards/s-[01].tar"}) {
    auto shards = open_source(spec);
    ASSERT_TRUE(shards.ok()) << spec << ": " << shards.error().message;
    ASSERT_EQ((*shards)->size(), 2u) << spec;
    EXPECT_EQ((*shards)->describe(1), tmp / "shards/s-1.tar:k.jpg");
    EXPECT_EQ((*shards)->label(1), 6);
  }
  // An existing path with glob characters is itself, not a pattern.
  write_file(tmp / "imgs[v2]/cls/a.jpg", "A");
  auto literal = open_source(tmp / "imgs[v2]");
  ASSERT_TRUE(literal.ok()) << literal.error().message;
  EXPECT_EQ((*literal)->describe(0), tmp / "imgs[v2]/cls/a.jpg");

  auto single = open_source(tmp / "single.tar");
  ASSERT_TRUE(single.ok()) << single.error().message;
  EXPECT_EQ((*single)->size(), 1u);
}

TEST(OpenSource, MissingSpecsAreNotFound) {
  TempDir tmp;
  for (const std::string& spec : {tmp / "absent", tmp / "absent.tar", tmp / "absent-{0..1}.tar", tmp / "*.tar",
                                 tmp / "no/such/dir"}) {
    auto r = open_source(spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.error().code, MLOS_ERR_NOT_FOUND) << spec << ": " << r.error().message;
  }
  EXPECT_EQ(open_source("").error().code, MLOS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace mlos::dataload
