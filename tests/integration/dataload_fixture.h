/* SPDX-License-Identifier: Apache-2.0 */
// Shared by the data loader's integration tests: a 12-sample ImageFolder
// of the fixture images, options for it, a loader handle that stops
// itself, and one epoch run to completion.
#pragma once

#include <gtest/gtest.h>
#include <mlos/dataload.h>
#include <mlos/training.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mlos_test {

inline const std::filesystem::path kImages = std::filesystem::path(MLOS_FIXTURES_DIR) / "images";

// class_a: 5 JPEGs, class_b: 4 JPEGs, class_c: 3 PNGs (12 samples).
inline void make_folder(const std::filesystem::path& root) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> classes = {
      {"class_a", {"jpeg_420.jpg", "jpeg_422.jpg", "jpeg_444.jpg", "photo_420.jpg", "jpeg_progressive.jpg"}},
      {"class_b", {"jpeg_gray.jpg", "jpeg_cmyk.jpg", "photo_420.jpg", "jpeg_420.jpg"}},
      {"class_c", {"png_rgb.png", "png_rgba.png", "png_palette.png"}}};
  for (const auto& [cls, files] : classes) {
    std::filesystem::create_directories(root / cls);
    int i = 0;
    for (const auto& f : files) std::filesystem::copy_file(kImages / f, root / cls / (std::to_string(i++) + "_" + f));
  }
}

inline mlos_dataload_options_t options(const std::string& source, uint32_t batch = 4) {
  mlos_dataload_options_t o{};
  o.struct_size = sizeof o;
  o.source = source.c_str();
  o.batch_size = batch;
  o.image_size = 32;
  o.transform = MLOS_DATALOAD_TRAIN;
  o.layout = MLOS_DATALOAD_U8_HWC;
  o.seed = 7;
  o.workers = 2;
  return o;
}

struct Loader {
  mlos_dataload_t* handle = nullptr;
  explicit Loader(const mlos_dataload_options_t& o, mlos_training_resources_t* job = nullptr) {
    EXPECT_EQ(mlos_dataload_start(job, &o, &handle), MLOS_OK) << mlos_last_error_message();
  }
  ~Loader() {
    if (handle) mlos_dataload_stop(handle);
  }
  mlos_dataload_info_t info() {
    mlos_dataload_info_t i{};
    i.struct_size = sizeof i;
    EXPECT_EQ(mlos_dataload_get_info(handle, &i), MLOS_OK) << mlos_last_error_message();
    return i;
  }
  mlos_dataload_stats_t stats() {
    mlos_dataload_stats_t st{};
    st.struct_size = sizeof st;
    EXPECT_EQ(mlos_dataload_get_stats(handle, &st), MLOS_OK) << mlos_last_error_message();
    return st;
  }
  std::string notes() {
    char buf[4096];
    size_t needed = 0;
    EXPECT_EQ(mlos_dataload_get_notes(handle, buf, sizeof buf, &needed), MLOS_OK) << mlos_last_error_message();
    return buf;
  }
  std::string errors() {
    char buf[8192];
    size_t needed = 0;
    EXPECT_EQ(mlos_dataload_get_errors(handle, buf, sizeof buf, &needed), MLOS_OK);
    return buf;
  }
};

struct EpochResult {
  std::multiset<int64_t> labels;
  std::map<uint64_t, std::string> bytes_by_batch;  // batch index -> its images
  uint64_t batches = 0, skipped = 0;
};

// Runs one epoch, releasing each batch after copying what it holds.
inline EpochResult run_epoch(Loader& l, uint64_t epoch, size_t sample_bytes) {
  EpochResult r;
  EXPECT_EQ(mlos_dataload_start_epoch(l.handle, epoch), MLOS_OK) << mlos_last_error_message();
  for (;;) {
    mlos_dataload_batch_t b{};
    const int rc = mlos_dataload_next(l.handle, &b, 60000);
    if (rc == MLOS_DATALOAD_END) break;
    EXPECT_EQ(rc, MLOS_OK) << mlos_last_error_message();
    if (rc != MLOS_OK) break;
    EXPECT_EQ(b.epoch, epoch);
    for (uint32_t i = 0; i < b.count; ++i) r.labels.insert(b.labels[i]);
    r.bytes_by_batch[b.index] = std::string(static_cast<const char*>(b.images), b.count * sample_bytes);
    r.skipped += b.skipped;
    ++r.batches;
    EXPECT_EQ(mlos_dataload_release_batch(l.handle, b.slot), MLOS_OK);
  }
  return r;
}

inline const std::multiset<int64_t> kAllLabels = {0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2};

}  // namespace mlos_test
