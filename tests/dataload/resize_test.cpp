// SPDX-License-Identifier: Apache-2.0
#include "dataload/resize.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataload/jpeg_decode.h"
#include "dataload/png_decode.h"
#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

using testing::compare;
using testing::read_fixture;

struct Copy {
  std::vector<uint8_t> bytes;
  ImageView view;
};
Copy keep(ImageView v) {
  Copy c;
  for (int y = 0; y < v.height; ++y) c.bytes.insert(c.bytes.end(), v.row(y), v.row(y) + v.width * 3);
  c.view = ImageView{c.bytes.data(), v.width, v.height, static_cast<size_t>(v.width) * 3};
  return c;
}

// Against PIL's resize(BILINEAR, box=..., reducing_gap=None) of the same
// pixels (the fixture photo decodes identically in PIL and here). Bounds
// are the measured values with a little headroom; the antialiased filter
// is an approximation of PIL's triangle, not a copy (resize.h).
TEST(Resize, CloseToPilBilinearAntialias) {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/image_refs.json");
  const auto cases = nlohmann::json::parse(in).at("resize");
  DecodeScratch scratch;
  auto photo_decoded = decode_jpeg(read_fixture("images/photo_420.jpg"), {}, scratch);
  ASSERT_TRUE(photo_decoded.ok());
  const Copy photo = keep(photo_decoded->view);
  // Measured (kAntialiasedLinear, MAD / max): shrink_whole 0.53/7 snapped,
  // 0.51/8 exact; the fractional box 2.66/30 snapped (its edges moved by
  // up to half a source pixel at a 2.5x shrink), 0.50/5 exact; integer
  // crop 0.42/4; enlarging 0.31/6 (whole-pixel boxes always take
  // cv::resize, which sees no pixels past the crop). Plain bilinear
  // shrinking 3.9x: 7.9/98.
  struct Bound {
    const char* name;
    double snapped_mad, exact_mad;
    int snapped_max, exact_max;
  };
  const Bound bounds[] = {
      {"shrink_whole", 0.7, 0.7, 10, 10},
      {"shrink_fractional_box", 3.0, 0.7, 36, 8},
      {"shrink_integer_crop", 0.6, 0.6, 6, 6},
      {"enlarge_crop", 0.4, 0.4, 8, 8},
  };
  const char* filter_names[] = {"antialiased", "area", "linear"};
  ASSERT_EQ(cases.size(), std::size(bounds));
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const std::string name = c["name"];
    ASSERT_EQ(name, bounds[i].name);
    auto ref_decoded = decode_png(read_fixture("dataload/resize_" + name + ".png"), {}, scratch);
    ASSERT_TRUE(ref_decoded.ok());
    const Copy ref = keep(ref_decoded->view);
    const auto box = c["box"];
    const RectD rect{box[0], box[1], box[2].get<double>() - box[0].get<double>(),
                     box[3].get<double>() - box[1].get<double>()};
    std::vector<uint8_t> out(static_cast<size_t>(ref.view.width) * ref.view.height * 3);
    MutableImageView dst{out.data(), ref.view.width, ref.view.height, static_cast<size_t>(ref.view.width) * 3};
    for (bool exact : {false, true}) {
      for (ResizeFilter filter : {ResizeFilter::kAntialiasedLinear, ResizeFilter::kLinear, ResizeFilter::kArea}) {
        ResizeOptions options{filter, exact};
        ASSERT_TRUE(resize_rgb(photo.view, rect, dst, options, scratch).ok());
        const auto d = compare(dst, ref.view);
        std::printf("  %-22s %-7s %-11s MAD %.3f max %d\n", name.c_str(), exact ? "exact" : "snapped",
                    filter_names[static_cast<int>(filter)], d.mean_abs, d.max_abs);
        if (filter == ResizeFilter::kAntialiasedLinear) {
          EXPECT_LE(d.mean_abs, exact ? bounds[i].exact_mad : bounds[i].snapped_mad) << name << " exact " << exact;
          EXPECT_LE(d.max_abs, exact ? bounds[i].exact_max : bounds[i].snapped_max) << name << " exact " << exact;
        }
      }
    }
  }
}

TEST(Resize, SameSizeWholePixelRectIsACopy) {
  const auto rgb = testing::synthetic_photo(50, 40);
  const ImageView src{rgb.data(), 50, 40, 150};
  std::vector<uint8_t> out(30 * 20 * 3);
  DecodeScratch scratch;
  for (bool exact : {false, true}) {
    ASSERT_TRUE(resize_rgb(src, RectD{5, 7, 30, 20}, MutableImageView{out.data(), 30, 20, 90}, {{}, exact}, scratch).ok());
    EXPECT_EQ(compare(ImageView{out.data(), 30, 20, 90}, testing::sub_view(src, RectI{5, 7, 30, 20})).max_abs, 0)
        << "exact " << exact;
  }
}

TEST(Resize, WritesOnlyInsideTheDestinationRows) {
  const auto rgb = testing::synthetic_photo(64, 48);
  std::vector<uint8_t> out(20 * 100, 0xAB);  // stride 100 > 16 * 3
  DecodeScratch scratch;
  ASSERT_TRUE(resize_rgb(ImageView{rgb.data(), 64, 48, 192}, RectD{0, 0, 64, 48},
                         MutableImageView{out.data(), 16, 12, 100}, {}, scratch)
                  .ok());
  for (int y = 0; y < 12; ++y) {
    for (int b = 48; b < 100; ++b) ASSERT_EQ(out[y * 100 + b], 0xAB) << "row " << y << " byte " << b;
  }
  for (size_t b = 1200; b < out.size(); ++b) ASSERT_EQ(out[b], 0xAB);
}

TEST(Resize, RejectsBadRectanglesAndBuffers) {
  const auto rgb = testing::synthetic_photo(10, 10);
  const ImageView src{rgb.data(), 10, 10, 30};
  std::vector<uint8_t> out(4 * 4 * 3);
  const MutableImageView dst{out.data(), 4, 4, 12};
  DecodeScratch scratch;
  for (const RectD& bad : {RectD{-1, 0, 5, 5}, RectD{6, 0, 5, 5}, RectD{0, 0, 0, 5}, RectD{0, 8, 5, 3}}) {
    auto s = resize_rgb(src, bad, dst, {}, scratch);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
  }
  EXPECT_FALSE(resize_rgb(src, RectD{0, 0, 5, 5}, MutableImageView{out.data(), 4, 4, 11}, {}, scratch).ok());
}

}  // namespace
}  // namespace mlos::dataload
