// SPDX-License-Identifier: Apache-2.0
// open_image_folder against torchvision.datasets.ImageFolder: the trees in
// tests/fixtures/dataload/image_folder_cases.json are rebuilt here and
// must give the classes, order and labels torchvision recorded
// (make_image_folder_cases.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dataload/sample_source.h"
#include "dataload/temp_dir.h"

namespace mlos::dataload {
namespace {

using testing::TempDir;

nlohmann::json load_cases() {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/image_folder_cases.json");
  return nlohmann::json::parse(in)["cases"];
}

const nlohmann::json& find_case(const nlohmann::json& cases, const std::string& name) {
  for (const auto& c : cases) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

// As make_image_folder_cases.py's build(): each file holds its own relative path.
void build_tree(const std::string& root, const nlohmann::json& c) {
  std::filesystem::create_directories(root);
  for (const auto& d : c["dirs"]) std::filesystem::create_directories(root + "/" + d.get<std::string>());
  for (const auto& f : c["files"]) testing::write_file(root + "/" + f.get<std::string>(), f.get<std::string>());
  for (const auto& link : c["symlinks"]) {
    const std::string path = root + "/" + link[0].get<std::string>();
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    ASSERT_EQ(::symlink(link[1].get<std::string>().c_str(), path.c_str()), 0) << path;
  }
}

std::string as_string(std::span<const uint8_t> bytes) { return {bytes.begin(), bytes.end()}; }

TEST(ImageFolderSource, MatchesTorchvisionOrderAndLabels) {
  const auto cases = load_cases();
  const auto& c = find_case(cases, "nested_mixed_case_symlinks");
  TempDir tmp;
  const std::string root = tmp / "root";
  build_tree(root, c);
  for (const std::string& spelled : {root, root + "/"}) {
    auto source = open_image_folder(spelled);
    ASSERT_TRUE(source.ok()) << source.error().message;
    const auto& s = **source;
    EXPECT_EQ(s.class_names(), c["classes"].get<std::vector<std::string>>());
    const auto& samples = c["samples"];
    ASSERT_EQ(s.size(), samples.size());
    ScratchBuffer buffer;
    for (size_t i = 0; i < s.size(); ++i) {
      const std::string relative = samples[i][0];
      EXPECT_EQ(s.describe(i), root + "/" + relative) << i;
      EXPECT_EQ(s.label(i), samples[i][1].get<int64_t>()) << relative;
      auto bytes = s.read(i, buffer);
      if (relative == "cat/broken.jpg") {  // a dangling symlink: listed, unreadable
        ASSERT_FALSE(bytes.ok());
        EXPECT_EQ(bytes.error().code, MLOS_ERR_IO);
        EXPECT_EQ(bytes.error().sys_errno, ENOENT);
        continue;
      }
      ASSERT_TRUE(bytes.ok()) << bytes.error().message;
      // Each file holds its path relative to the root; linked ones their target's.
      EXPECT_EQ(as_string(*bytes), testing::read_file(root + "/" + relative));
      if (relative.find("link") == std::string::npos && !relative.starts_with("elk/")) {
        EXPECT_EQ(as_string(*bytes), relative);
      }
    }
  }
}

TEST(ImageFolderSource, EmptyClassesAreNamedLikeTorchvision) {
  const auto cases = load_cases();
  {
    const auto& c = find_case(cases, "empty_classes");
    ASSERT_EQ(c["error"], "FileNotFoundError");
    TempDir tmp;
    build_tree(tmp / "root", c);
    auto source = open_image_folder(tmp / "root");
    ASSERT_FALSE(source.ok());
    EXPECT_EQ(source.error().code, MLOS_ERR_NOT_FOUND);
    // torchvision: "Found no valid file for the classes also_empty, empty. Supported ..."
    const std::string expected = c["message"].get<std::string>().substr(0, c["message"].get<std::string>().find('.'));
    EXPECT_NE(source.error().message.find(expected), std::string::npos) << source.error().message;
    EXPECT_NE(source.error().message.find(".jpg, .jpeg, .png"), std::string::npos);
  }
  {
    const auto& c = find_case(cases, "no_classes");
    TempDir tmp;
    build_tree(tmp / "root", c);
    auto source = open_image_folder(tmp / "root");
    ASSERT_FALSE(source.ok());
    EXPECT_EQ(source.error().code, MLOS_ERR_NOT_FOUND);
    std::string expected = c["message"];
    expected.replace(expected.find("<root>"), 6, tmp / "root");
    EXPECT_EQ(source.error().message, expected);
  }
}

TEST(ImageFolderSource, MissingRootIsNotFound) {
  TempDir tmp;
  auto source = open_image_folder(tmp / "nothing");
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(source.error().message.find(tmp / "nothing"), std::string::npos);
}

TEST(ImageFolderSource, SymlinkLoopsAreNotFollowed) {
  // torchvision would follow these until the path fails with ELOOP,
  // listing a.jpg some forty times; here a directory is never entered
  // from inside itself.
  TempDir tmp;
  testing::write_file(tmp / "root/c/a.jpg", "a");
  ASSERT_EQ(::symlink(".", (tmp / "root/c/self").c_str()), 0);          // c/self -> c
  ASSERT_EQ(::mkdir((tmp / "root/c/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("../..", (tmp / "root/c/real/up").c_str()), 0);   // c/real/up -> root
  auto source = open_image_folder(tmp / "root");
  ASSERT_TRUE(source.ok()) << source.error().message;
  // "up" is root, not an ancestor of c's walk, so it is listed once; its
  // entry c is an ancestor and is not entered again.
  ASSERT_EQ((*source)->size(), 1u);
  EXPECT_EQ((*source)->describe(0), tmp / "root/c/a.jpg");
}

TEST(ImageFolderSource, FileDeletedAfterOpenIsAnIoErrorNamingIt) {
  TempDir tmp;
  testing::write_file(tmp / "root/c/a.jpg", "aaaa");
  testing::write_file(tmp / "root/c/b.jpg", "bbbb");
  auto source = open_image_folder(tmp / "root");
  ASSERT_TRUE(source.ok()) << source.error().message;
  ASSERT_EQ(::unlink((tmp / "root/c/a.jpg").c_str()), 0);
  ScratchBuffer buffer;
  auto gone = (*source)->read(0, buffer);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, MLOS_ERR_IO);
  EXPECT_EQ(gone.error().sys_errno, ENOENT);
  EXPECT_NE(gone.error().message.find(tmp / "root/c/a.jpg"), std::string::npos);
  auto other = (*source)->read(1, buffer);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(as_string(*other), "bbbb");
  (*source)->will_read(0);  // advice on a missing file: nothing happens
  (*source)->will_read(1);
}

TEST(ImageFolderSource, OversizedSamplesAndBadIndicesAreRefused) {
  TempDir tmp;
  testing::write_file(tmp / "root/c/a.jpg", "12345");
  SourceOptions small;
  small.max_sample_bytes = 4;
  auto source = open_image_folder(tmp / "root", small);
  ASSERT_TRUE(source.ok());
  ScratchBuffer buffer;
  auto big = (*source)->read(0, buffer);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(big.error().message.find("over the limit of 4"), std::string::npos) << big.error().message;
  EXPECT_EQ(buffer.capacity(), 0u);  // refused before allocating
  auto out = (*source)->read(1, buffer);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ((*source)->label(1), -1);
}

}  // namespace
}  // namespace mlos::dataload
