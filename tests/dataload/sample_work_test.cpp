// SPDX-License-Identifier: Apache-2.0
// The per-sample work budget (sample_work.h): red-team finding 11 (issue
// 47), a small PNG under the pixel limit whose decode and antialiased
// resize would hold a decoding thread for minutes. Every assertion is on
// the budget's decision, never on time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dataload/jpeg_decode.h"
#include "dataload/sample_decode.h"
#include "dataload/sample_work.h"
#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

SampleOptions u8_options() {
  SampleOptions o;
  o.layout = SampleLayout::kU8Hwc;
  return o;
}

// 13000 x 13000 = 169 MP: under DecodeOptions::max_pixels (179 MP).
TEST(SampleWorkBudget, ASmallPngOfHugeDimensionsIsRefusedBeforeDecoding) {
  const auto png = testing::blank_png(13000, 13000);
  ASSERT_LT(png.size(), 164u * 1024);  // the finding's file was 164 KB
  std::vector<uint8_t> out(224 * 224 * 3);
  DecodeScratch scratch;
  auto val = decode_val_sample(png, u8_options(), scratch, {out.data(), out.size()});
  ASSERT_FALSE(val.ok());
  EXPECT_EQ(val.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(val.error().message.find("max_work"), std::string::npos) << val.error().message;
  for (uint64_t seed = 1; seed <= 8; ++seed) {  // any crop, from 8 % of the area to all of it
    SeededRandom random(seed);
    auto train = decode_train_sample(png, random, u8_options(), scratch, {out.data(), out.size()});
    ASSERT_FALSE(train.ok()) << "seed " << seed;
    EXPECT_NE(train.error().message.find("max_work"), std::string::npos) << train.error().message;
  }
  // Refused before the work, not after it: nothing was ever inflated.
  EXPECT_EQ(scratch.pixels.capacity(), 0u);
  EXPECT_EQ(scratch.filtered.capacity(), 0u);
}

// The estimate of a sample at its largest: the validation crop and 200
// training crops, each at the DCT scale the sample decoder would choose.
// Measured (2-CPU development machine): PNG 24 MP 2.9e9, 30 MP 3.8e9,
// 39 MP 6.3e9; JPEG 50 MP 2.4e9, 100 MP 4.8e9; the 13000 x 13000 PNG's
// cheapest training crop 9.2e9.
double worst_estimate(ImageFormat format, Size image, const SampleOptions& o = {}) {
  auto at = [&](const RectD& crop) {
    const bool scaled = format == ImageFormat::kJpeg && o.dct_scaling;
    const int scale = scaled ? choose_dct_scale(crop.width, crop.height, o.output) : 8;
    return estimate_sample_work(format, image, crop, scale, o.output, o.resize).total();
  };
  double worst = at(center_crop_geometry(image.width, image.height, o.val_resize_shorter, o.output.width).crop_source);
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SeededRandom random(seed);
    const RectI c = sample_random_resized_crop(image.width, image.height, o.crop, random);
    worst = std::max(worst, at(RectD{double(c.x), double(c.y), double(c.width), double(c.height)}));
  }
  return worst;
}

TEST(SampleWorkBudget, TheDefaultBudgetAdmitsOrdinaryPhotosAndNoHugePng) {
  const double budget = static_cast<double>(kDefaultMaxSampleWork);
  EXPECT_LT(worst_estimate(ImageFormat::kJpeg, {8660, 5773}), budget / 2);  // 50 MP JPEG, DCT scaled
  EXPECT_LT(worst_estimate(ImageFormat::kJpeg, {11547, 8660}), budget);     // 100 MP JPEG
  EXPECT_LT(worst_estimate(ImageFormat::kPng, {6000, 4000}), budget);       // 24 MP PNG
  EXPECT_LT(worst_estimate(ImageFormat::kPng, {6708, 4472}), budget);       // 30 MP PNG
  // Decoding alone: no PNG over budget / kDecodeWorkPerPixel = 125 MP fits.
  EXPECT_GT(estimate_sample_work(ImageFormat::kPng, {12500, 10001}, {0, 0, 1, 1}, 8, {224, 224}, {}).total(), budget);
  SampleOptions no_dct;
  no_dct.dct_scaling = false;
  EXPECT_LT(worst_estimate(ImageFormat::kJpeg, {6000, 4000}, no_dct), budget);  // 24 MP JPEG, full-size regions
}

// Exactly the budget decodes; one unit less is refused, before decoding.
TEST(SampleWorkBudget, ASampleAtTheBudgetDecodesAndOneUnitOverIsRefused) {
  constexpr int kW = 1000, kH = 750;
  const auto png = testing::encode_png(testing::synthetic_photo(kW, kH), kW, kH);
  SampleOptions o = u8_options();
  const RectD crop = center_crop_geometry(kW, kH, o.val_resize_shorter, o.output.width).crop_source;
  const double work = estimate_sample_work(ImageFormat::kPng, {kW, kH}, crop, 8, o.output, o.resize).total();
  ASSERT_EQ(work, std::floor(work));  // whole units: the boundary is exact
  std::vector<uint8_t> out(224 * 224 * 3);

  o.max_work = static_cast<int64_t>(work) - 1;
  DecodeScratch refused;
  auto over = decode_val_sample(png, o, refused, {out.data(), out.size()});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(over.error().message.find("over the budget"), std::string::npos) << over.error().message;
  EXPECT_EQ(refused.pixels.capacity(), 0u);

  o.max_work = static_cast<int64_t>(work);
  DecodeScratch scratch;
  auto at = decode_val_sample(png, o, scratch, {out.data(), out.size()});
  ASSERT_TRUE(at.ok()) << at.error().message;
  EXPECT_EQ(at->image, (Size{kW, kH}));
  EXPECT_GE(scratch.pixels.capacity(), size_t{kW} * kH * 3);  // decoded whole

  o.max_work = 0;  // no budget
  EXPECT_TRUE(decode_val_sample(png, o, scratch, {out.data(), out.size()}).ok());
}

// The default budget changes nothing for an ordinary photo of each format.
TEST(SampleWorkBudget, OrdinaryPhotosDecodeUnderTheDefaultBudget) {
  constexpr int kW = 2000, kH = 1500;
  const auto rgb = testing::synthetic_photo(kW, kH);
  std::vector<uint8_t> out(224 * 224 * 3);
  DecodeScratch scratch;
  for (const auto& bytes : {testing::encode_png(rgb, kW, kH), testing::encode_jpeg(rgb, kW, kH, {})}) {
    EXPECT_TRUE(decode_val_sample(bytes, u8_options(), scratch, {out.data(), out.size()}).ok());
    SeededRandom random(5);
    EXPECT_TRUE(decode_train_sample(bytes, random, u8_options(), scratch, {out.data(), out.size()}).ok());
  }
}

// resize_work's terms, worked by hand: a 2x shrink has sigma^2 = (4 - 1) / 6,
// radius ceil(2.5 * 0.707) = 2, so 5 + 5 taps on each pixel of the 448 x 448
// box (the source, which the padded box would exceed), plus 16 per output
// pixel; no pre-filter when enlarging or for plain bilinear.
TEST(SampleWorkBudget, ResizeWorkCountsThePrefilterTapsOfTheFilteredBox) {
  EXPECT_EQ(resize_work(448, 448, {448, 448}, {224, 224}, {}), 448.0 * 448 * 10 + 224.0 * 224 * 16);
  EXPECT_EQ(resize_work(448, 448, {4000, 4000}, {224, 224}, {}), 457.0 * 457 * 10 + 224.0 * 224 * 16);
  EXPECT_EQ(resize_work(40, 30, {40, 30}, {224, 224}, {}), 224.0 * 224 * 16);
  EXPECT_EQ(resize_work(448, 448, {448, 448}, {224, 224}, {ResizeFilter::kLinear, true}), 224.0 * 224 * 16);
  EXPECT_EQ(resize_work(448, 448, {448, 448}, {224, 224}, {ResizeFilter::kArea, true}),
            448.0 * 448 * 20 + 224.0 * 224 * 16);
}

}  // namespace
}  // namespace mlos::dataload
