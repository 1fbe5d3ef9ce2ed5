// SPDX-License-Identifier: Apache-2.0
#include "dataload/image_transforms.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace mlos::dataload {
namespace {

// A 3x2 image whose bytes are 0..17 row-major: pixel (x, y) channel c is
// (y * 3 + x) * 3 + c.
std::vector<uint8_t> ramp() {
  std::vector<uint8_t> v(18);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i);
  return v;
}

TEST(ImageTransforms, FlipHorizontalMirrorsEachRow) {
  auto pixels = ramp();
  flip_horizontal(MutableImageView{pixels.data(), 3, 2, 9});
  const std::vector<uint8_t> expected = {6, 7, 8, 3, 4, 5, 0, 1, 2, 15, 16, 17, 12, 13, 14, 9, 10, 11};
  EXPECT_EQ(pixels, expected);
}

TEST(ImageTransforms, PackHwcCopiesRowsAndHonoursStride) {
  // Stride 10: one padding byte per row that must not reach the output.
  std::vector<uint8_t> padded(20, 99);
  auto src = ramp();
  for (int y = 0; y < 2; ++y) std::memcpy(&padded[y * 10], &src[y * 9], 9);
  std::vector<uint8_t> out(18);
  ASSERT_TRUE(pack_sample(ImageView{padded.data(), 3, 2, 10}, false, SampleLayout::kU8Hwc, {}, out.data(), out.size()).ok());
  EXPECT_EQ(out, src);
  ASSERT_TRUE(pack_sample(ImageView{padded.data(), 3, 2, 10}, true, SampleLayout::kU8Hwc, {}, out.data(), out.size()).ok());
  auto flipped = ramp();
  flip_horizontal(MutableImageView{flipped.data(), 3, 2, 9});
  EXPECT_EQ(out, flipped);
}

TEST(ImageTransforms, PackChwSeparatesPlanesWithFlipFolded) {
  auto src = ramp();
  std::vector<uint8_t> out(18);
  ASSERT_TRUE(pack_sample(ImageView{src.data(), 3, 2, 9}, true, SampleLayout::kU8Chw, {}, out.data(), out.size()).ok());
  // Red plane: pixels right to left per row: x=2,1,0 -> bytes 6,3,0 then 15,12,9.
  const std::vector<uint8_t> expected = {6, 3, 0, 15, 12, 9, 7, 4, 1, 16, 13, 10, 8, 5, 2, 17, 14, 11};
  EXPECT_EQ(out, expected);
}

TEST(ImageTransforms, PackF32NormalisesLikeToTensorThenNormalize) {
  std::vector<uint8_t> src = {0, 128, 255};  // one pixel
  std::vector<float> out(3);
  const Normalization n;
  ASSERT_TRUE(pack_sample(ImageView{src.data(), 1, 1, 3}, false, SampleLayout::kF32Chw, n, out.data(),
                          out.size() * sizeof(float))
                  .ok());
  // torch: (x.float() / 255 - mean) / std, all in float32.
  EXPECT_EQ(out[0], (0.0f / 255.0f - 0.485f) / 0.229f);
  EXPECT_EQ(out[1], (128.0f / 255.0f - 0.456f) / 0.224f);
  EXPECT_EQ(out[2], (255.0f / 255.0f - 0.406f) / 0.225f);
  EXPECT_NEAR(out[2], 2.64f, 1e-3f);
}

TEST(ImageTransforms, PackRefusesShortOrMisalignedDestinations) {
  auto src = ramp();
  std::vector<uint8_t> out(17);
  auto st = pack_sample(ImageView{src.data(), 3, 2, 9}, false, SampleLayout::kU8Hwc, {}, out.data(), out.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, MLOS_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(packed_sample_bytes(Size{3, 2}, SampleLayout::kF32Chw), 72u);
  std::vector<uint8_t> floats(80);
  st = pack_sample(ImageView{src.data(), 3, 2, 9}, false, SampleLayout::kF32Chw, {}, floats.data() + 1, 72);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, MLOS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace mlos::dataload
