// SPDX-License-Identifier: Apache-2.0
#include "dataload/jpeg_decode.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

using testing::compare;
using testing::encode_jpeg;
using testing::JpegEncoding;
using testing::read_fixture;
using testing::sub_view;

nlohmann::json decode_refs() {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/image_refs.json");
  return nlohmann::json::parse(in).at("decode");
}

// Owns a copy of a decoded image, so a second decode can reuse the scratch.
struct Pixels {
  std::vector<uint8_t> bytes;
  int width = 0, height = 0;
  explicit Pixels(ImageView v) : width(v.width), height(v.height) {
    for (int y = 0; y < v.height; ++y) bytes.insert(bytes.end(), v.row(y), v.row(y) + v.width * 3);
  }
  ImageView view() const { return ImageView{bytes.data(), width, height, static_cast<size_t>(width) * 3}; }
};

// Full decode equals PIL's Image.open(f).convert("RGB") bit for bit: the
// tolerance is zero (same libjpeg-turbo, JDCT_ISLOW, fancy upsampling;
// CMYK through PIL's own formula).
TEST(JpegDecode, FullDecodeIsPixelIdenticalToPil) {
  const auto refs = decode_refs();
  int checked = 0;
  for (const auto& [name, ref] : refs.items()) {
    if (name.find(".jpg") == std::string::npos) continue;
    DecodeScratch scratch;
    auto image = decode_jpeg(read_fixture("images/" + name), {}, scratch);
    ASSERT_TRUE(image.ok()) << name << ": " << image.error().message;
    EXPECT_EQ(image->view.width, ref["width"].get<int>()) << name;
    EXPECT_EQ(image->view.height, ref["height"].get<int>()) << name;
    EXPECT_EQ(testing::fnv1a64_hex(image->view), ref["fnv1a64"].get<std::string>()) << name;
    const uint8_t* first = image->view.row(0);
    EXPECT_EQ((std::vector<int>{first[0], first[1], first[2]}), ref["corners"][0].get<std::vector<int>>()) << name;
    EXPECT_EQ(image->warnings, 0) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 7);  // 4:2:0, 4:2:2, 4:4:4, grey, CMYK, progressive, photo
}

TEST(JpegDecode, HeaderReportsSizeComponentsAndProgression) {
  auto h = read_jpeg_header(read_fixture("images/jpeg_cmyk.jpg"));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->size, (Size{67, 45}));
  EXPECT_EQ(h->components, 4);
  EXPECT_FALSE(h->progressive);
  auto p = read_jpeg_header(read_fixture("images/jpeg_progressive.jpg"));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->progressive);
  EXPECT_EQ(read_jpeg_header(read_fixture("images/jpeg_gray.jpg"))->components, 1);
}

TEST(JpegDecode, ChoosesTheSmallestScaleThatKeepsTheTargetSize) {
  EXPECT_EQ(choose_dct_scale(500, 375, Size{224, 224}, false), 5);  // 312.5 x 234.4; at 4/8 height is 187
  EXPECT_EQ(choose_dct_scale(500, 375, Size{224, 224}), 8);         // SIMD scales only: 4/8 is too small
  EXPECT_EQ(choose_dct_scale(448, 448, Size{224, 224}), 4);         // exactly half
  EXPECT_EQ(choose_dct_scale(900, 500, Size{224, 224}), 4);
  EXPECT_EQ(choose_dct_scale(1000, 900, Size{224, 224}), 2);
  EXPECT_EQ(choose_dct_scale(2000, 1800, Size{224, 224}), 1);
  EXPECT_EQ(choose_dct_scale(300, 200, Size{224, 224}), 8);  // would upscale anyway
  EXPECT_EQ(choose_dct_scale(1792, 224, Size{224, 224}), 8);  // one side already at target
}

struct RegionCase {
  const char* label;
  JpegEncoding encoding;
};

class JpegRegion : public ::testing::TestWithParam<RegionCase> {};

// At scale 8/8 the region decoder's pixels are the full decode's, exactly,
// for crops at every alignment and at the image edges; at a reduced scale
// they are the full image decoded at that scale, cropped.
TEST_P(JpegRegion, RegionEqualsCropOfWholeDecodeAtEveryScale) {
  const int width = 301, height = 223;  // partial iMCUs right and bottom
  const auto rgb = testing::synthetic_photo(width, height);
  const auto jpeg = encode_jpeg(rgb, width, height, GetParam().encoding);
  const std::vector<RectD> crops = {
      {0, 0, 301, 223}, {1, 1, 50, 40}, {17, 9, 100, 77}, {150, 100, 151, 123}, {299, 221, 2, 2},
      {33, 0, 1, 223},  {0, 57, 301, 1}, {64, 48, 64, 48}, {7.5, 3.25, 120.5, 90.75},
  };
  for (int scale = 1; scale <= 8; ++scale) {
    DecodeScratch whole_scratch;
    auto whole = decode_jpeg_region(jpeg, JpegRegionRequest{{0, 0, double(width), double(height)}, scale, 0}, {},
                                    whole_scratch);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    ASSERT_EQ(whole->decoded, (RectI{0, 0, whole->scaled_image.width, whole->scaled_image.height}));
    if (scale == 8) {
      DecodeScratch s;
      auto full = decode_jpeg(jpeg, {}, s);
      ASSERT_TRUE(full.ok());
      EXPECT_EQ(compare(full->view, whole->view).max_abs, 0);
    }
    for (const RectD& crop : crops) {
      for (int margin : {0, 3}) {
        DecodeScratch scratch;
        auto region = decode_jpeg_region(jpeg, JpegRegionRequest{crop, scale, margin}, {}, scratch);
        ASSERT_TRUE(region.ok()) << region.error().message;
        const RectI at = region->decoded;
        const double s = scale / 8.0;
        // The decoded area covers the crop (plus margin) in scaled pixels...
        EXPECT_LE(at.x, std::max(0.0, std::floor(crop.x * s) - margin));
        EXPECT_LE(at.y, std::max(0.0, std::floor(crop.y * s) - margin));
        EXPECT_GE(at.x + at.width, std::min<double>(whole->scaled_image.width, std::ceil((crop.x + crop.width) * s)));
        EXPECT_GE(at.y + at.height, std::min<double>(whole->scaled_image.height, std::ceil((crop.y + crop.height) * s)));
        // ...the crop maps by s exactly...
        EXPECT_DOUBLE_EQ(region->crop_in_view.x, crop.x * s - at.x);
        EXPECT_DOUBLE_EQ(region->crop_in_view.y, crop.y * s - at.y);
        EXPECT_DOUBLE_EQ(region->crop_in_view.width, crop.width * s);
        // ...and its pixels are the whole scaled image's there, bit for bit.
        const auto d = compare(region->view, sub_view(whole->view, at));
        EXPECT_EQ(d.max_abs, 0) << GetParam().label << " scale " << scale << " crop " << crop.x << "," << crop.y
                                << " " << crop.width << "x" << crop.height << " margin " << margin;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, JpegRegion,
                         ::testing::Values(RegionCase{"420", {90, 2, 2}}, RegionCase{"422", {90, 2, 1}},
                                           RegionCase{"444", {90, 1, 1}}, RegionCase{"grey", {90, 1, 1, false, 0, true}},
                                           RegionCase{"progressive420", {90, 2, 2, true}},
                                           RegionCase{"restart420", {90, 2, 2, false, 1}}),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(JpegDecode, RegionOfCmykAndFixtureFilesMatchesFullDecode) {
  for (const char* name : {"images/jpeg_cmyk.jpg", "images/jpeg_progressive.jpg", "images/photo_420.jpg"}) {
    const auto bytes = read_fixture(name);
    DecodeScratch a, b;
    auto full = decode_jpeg(bytes, {}, a);
    ASSERT_TRUE(full.ok());
    auto region = decode_jpeg_region(bytes, JpegRegionRequest{{21, 13, 30, 25}, 8, 0}, {}, b);
    ASSERT_TRUE(region.ok()) << name << ": " << region.error().message;
    EXPECT_EQ(compare(region->view, sub_view(full->view, region->decoded)).max_abs, 0) << name;
    EXPECT_LE(region->decoded.x, 21);
    EXPECT_LT(region->decoded.width, full->view.width) << name << ": columns were not cropped";
    EXPECT_LE(region->decoded.height, 25) << name << ": rows were not skipped";
  }
}

TEST(JpegDecode, RegionRejectsCropsOutsideTheImageAndBadScales) {
  const auto bytes = read_fixture("images/jpeg_420.jpg");  // 67x45
  DecodeScratch scratch;
  for (const RectD& bad : {RectD{60, 0, 8, 10}, RectD{0, 40, 10, 6}, RectD{-1, 0, 5, 5}, RectD{3, 3, 0, 5}}) {
    auto r = decode_jpeg_region(bytes, JpegRegionRequest{bad, 8, 0}, {}, scratch);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(r.error().message.find("crop"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(decode_jpeg_region(bytes, JpegRegionRequest{{0, 0, 5, 5}, 0, 0}, {}, scratch).ok());
  EXPECT_FALSE(decode_jpeg_region(bytes, JpegRegionRequest{{0, 0, 5, 5}, 9, 0}, {}, scratch).ok());
}

TEST(JpegDecode, ScratchIsReusedWithoutGrowing) {
  const auto bytes = read_fixture("images/photo_420.jpg");
  DecodeScratch scratch;
  ASSERT_TRUE(decode_jpeg(bytes, {}, scratch).ok());
  const uint8_t* first = scratch.pixels.data();
  const size_t capacity = scratch.pixels.capacity();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(decode_jpeg_region(bytes, JpegRegionRequest{{10, 10, 100, 80}, 4, 2}, {}, scratch).ok());
    ASSERT_TRUE(decode_jpeg(bytes, {}, scratch).ok());
  }
  EXPECT_EQ(scratch.pixels.data(), first);
  EXPECT_EQ(scratch.pixels.capacity(), capacity);
}

}  // namespace
}  // namespace mlos::dataload
