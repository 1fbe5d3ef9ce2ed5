// SPDX-License-Identifier: Apache-2.0
#include "dataload/sample_decode.h"

#include <gtest/gtest.h>

#include <vector>

#include "dataload/jpeg_decode.h"
#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

using testing::compare;

// Large enough that most crops decode at 4/8 or 2/8.
constexpr int kW = 1000, kH = 750;

std::vector<uint8_t> photo_jpeg() {
  return testing::encode_jpeg(testing::synthetic_photo(kW, kH), kW, kH, {});
}

SampleOptions u8_options() {
  SampleOptions o;
  o.layout = SampleLayout::kU8Hwc;
  return o;
}

// The same crop decoded at full size and resized exactly: what the sample
// would be without DCT scaling and region decoding.
std::vector<uint8_t> reference(const std::vector<uint8_t>& jpeg, const RectD& crop, bool flip) {
  DecodeScratch scratch;
  auto full = decode_jpeg(jpeg, {}, scratch);
  EXPECT_TRUE(full.ok());
  std::vector<uint8_t> out(224 * 224 * 3);
  MutableImageView dst{out.data(), 224, 224, 224 * 3};
  EXPECT_TRUE(resize_rgb(full->view, crop, dst, {ResizeFilter::kAntialiasedLinear, true}, scratch).ok());
  if (flip) flip_horizontal(dst);
  return out;
}

// Measured on this image (synthetic, sharp stripes: a hard case) over 12
// crops: with exact sub-pixel mapping, MAD 0 at scale 8/8 (the region
// decode is the full decode) and 0.63-0.76 at 4/8 (the DCT-domain shrink is
// a different low-pass than the pre-filter); snapped to whole pixels,
// 0.05-0.13 at 8/8 and 1.0-3.2 at 4/8.
TEST(SampleDecode, TrainSampleIsTheCropResizedAndFlipped) {
  const auto jpeg = photo_jpeg();
  DecodeScratch scratch;
  for (bool exact : {true, false}) {
    int scaled = 0, flipped = 0;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      SeededRandom random(seed);
      std::vector<uint8_t> out(224 * 224 * 3);
      SampleOptions o = u8_options();
      o.resize.exact_subpixel = exact;
      auto info = decode_train_sample(jpeg, random, o, scratch, {out.data(), out.size()});
      ASSERT_TRUE(info.ok()) << info.error().message;
      EXPECT_EQ(info->format, ImageFormat::kJpeg);
      EXPECT_EQ(info->image, (Size{kW, kH}));
      EXPECT_EQ(info->dct_scale_num, choose_dct_scale(info->crop.width, info->crop.height, {224, 224}));
      scaled += info->dct_scale_num < 8;
      flipped += info->flipped;
      const auto ref = reference(jpeg, info->crop, info->flipped);
      const auto d = compare(ImageView{out.data(), 224, 224, 672}, ImageView{ref.data(), 224, 224, 672});
      const bool full_size = info->dct_scale_num == 8;
      const double bound = exact ? (full_size ? 0.0 : 1.0) : (full_size ? 0.3 : 3.6);
      EXPECT_LE(d.mean_abs, bound) << "seed " << seed << " scale " << info->dct_scale_num << " exact " << exact;
    }
    EXPECT_GT(scaled, 0);
    EXPECT_GT(flipped, 0);
    EXPECT_LT(flipped, 12);
  }
}

TEST(SampleDecode, SameSeedSameBytesAndFlipMirrors) {
  const auto jpeg = photo_jpeg();
  DecodeScratch scratch;
  auto run = [&](double flip_p) {
    SeededRandom random(99);
    SampleOptions o = u8_options();
    o.flip_probability = flip_p;
    std::vector<uint8_t> out(224 * 224 * 3);
    EXPECT_TRUE(decode_train_sample(jpeg, random, o, scratch, {out.data(), out.size()}).ok());
    return out;
  };
  const auto a = run(0.0), b = run(0.0), mirrored = run(1.0);
  EXPECT_EQ(a, b);
  auto unmirrored = mirrored;
  flip_horizontal(MutableImageView{unmirrored.data(), 224, 224, 672});
  EXPECT_EQ(unmirrored, a);
}

TEST(SampleDecode, ValSampleIsResizeThenCenterCrop) {
  const auto jpeg = photo_jpeg();
  DecodeScratch scratch;
  std::vector<uint8_t> out(224 * 224 * 3);
  auto info = decode_val_sample(jpeg, u8_options(), scratch, {out.data(), out.size()});
  ASSERT_TRUE(info.ok()) << info.error().message;
  const auto g = center_crop_geometry(kW, kH, 256, 224);
  EXPECT_DOUBLE_EQ(info->crop.x, g.crop_source.x);
  EXPECT_DOUBLE_EQ(info->crop.width, g.crop_source.width);
  EXPECT_EQ(info->dct_scale_num, 4);  // Resize(256) makes it 341x256; 750 * 4/8 = 375 >= 256 > 750 * 2/8
  const auto ref = reference(jpeg, info->crop, false);
  EXPECT_LT(compare(ImageView{out.data(), 224, 224, 672}, ImageView{ref.data(), 224, 224, 672}).mean_abs, 2.5);
}

TEST(SampleDecode, FloatOutputAndPngInput) {
  const auto png = testing::read_fixture("images/png_rgb.png");  // 40x30: upscaled
  DecodeScratch scratch;
  SeededRandom random(3);
  SampleOptions o;  // float32 CHW, ImageNet normalisation
  std::vector<float> out(3 * 224 * 224, -100.0f);
  auto info = decode_train_sample(png, random, o, scratch, {out.data(), out.size() * sizeof(float)});
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->format, ImageFormat::kPng);
  EXPECT_EQ(info->dct_scale_num, 8);
  for (float v : out) {
    ASSERT_GE(v, (0.0f - 0.485f) / 0.229f - 1e-5f);
    ASSERT_LE(v, (1.0f - 0.406f) / 0.225f + 1e-5f);
  }
}

TEST(SampleDecode, ErrorsComeBackAsErrors) {
  const auto jpeg = photo_jpeg();
  DecodeScratch scratch;
  SeededRandom random(1);
  std::vector<uint8_t> small(224 * 224 * 3 - 1);
  auto r = decode_train_sample(jpeg, random, u8_options(), scratch, {small.data(), small.size()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, MLOS_ERR_BUFFER_TOO_SMALL);
  std::vector<uint8_t> out(224 * 224 * 3);
  const std::vector<uint8_t> truncated(jpeg.begin(), jpeg.begin() + jpeg.size() / 3);
  // The crop may lie above the cut; the val crop (centre, full height
  // range at scale 6) always reaches it.
  auto v = decode_val_sample(truncated, u8_options(), scratch, {out.data(), out.size()});
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("Premature end"), std::string::npos) << v.error().message;
  const std::vector<uint8_t> junk = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto u = decode_train_sample(junk, random, u8_options(), scratch, {out.data(), out.size()});
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code, MLOS_ERR_UNSUPPORTED);
}

}  // namespace
}  // namespace mlos::dataload
