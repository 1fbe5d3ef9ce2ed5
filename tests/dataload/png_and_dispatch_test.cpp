// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "dataload/image_decode.h"
#include "dataload/png_decode.h"
#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

using testing::read_fixture;

// PIL's convert("RGB") of RGB, RGBA (alpha dropped), grey, palette and
// 16-bit PNGs, bit for bit.
TEST(PngDecode, MatchesPilConvertRgb) {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/image_refs.json");
  const auto refs = nlohmann::json::parse(in).at("decode");
  int checked = 0;
  for (const auto& [name, ref] : refs.items()) {
    if (name.find(".png") == std::string::npos) continue;
    DecodeScratch scratch;
    auto image = decode_png(read_fixture("images/" + name), {}, scratch);
    ASSERT_TRUE(image.ok()) << name << ": " << image.error().message;
    EXPECT_EQ(image->view.width, ref["width"].get<int>()) << name;
    EXPECT_EQ(image->view.height, ref["height"].get<int>()) << name;
    EXPECT_EQ(testing::fnv1a64_hex(image->view), ref["fnv1a64"].get<std::string>()) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(ImageDecode, SniffsMagicBytesAndDispatches) {
  const auto jpeg = read_fixture("images/jpeg_444.jpg");
  const auto png = read_fixture("images/png_palette.png");
  EXPECT_EQ(sniff_image_format(jpeg), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(png), ImageFormat::kPng);
  EXPECT_EQ(sniff_image_format(std::vector<uint8_t>{0xFF, 0xD8}), ImageFormat::kUnknown);  // too short
  auto hj = read_image_header(jpeg);
  ASSERT_TRUE(hj.ok());
  EXPECT_EQ(hj->format, ImageFormat::kJpeg);
  EXPECT_EQ(hj->size, (Size{67, 45}));
  auto hp = read_image_header(png);
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->size, (Size{40, 30}));
  DecodeScratch scratch;
  auto dj = decode_image(jpeg, {}, scratch);
  ASSERT_TRUE(dj.ok());
  EXPECT_EQ(dj->view.width, 67);
  auto dp = decode_image(png, {}, scratch);
  ASSERT_TRUE(dp.ok());
  EXPECT_EQ(dp->view.height, 30);
}

}  // namespace
}  // namespace mlos::dataload
