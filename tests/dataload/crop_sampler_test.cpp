// SPDX-License-Identifier: Apache-2.0
#include "dataload/crop_sampler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mlos::dataload {
namespace {

nlohmann::json load_cases() {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/crop_cases.json");
  return nlohmann::json::parse(in);
}

// Replays the draws torchvision consumed (make_crop_cases.py) and checks
// each request asks for the same kind of draw with the same bounds.
class ReplayedRandom final : public RandomSource {
 public:
  explicit ReplayedRandom(const nlohmann::json& draws) : draws_(draws) {}
  double uniform(double lo, double hi) override {
    const auto& d = next("uniform");
    EXPECT_EQ(lo, d[1].get<double>()) << "draw " << index_;
    EXPECT_EQ(hi, d[2].get<double>()) << "draw " << index_;
    return d[3].get<double>();
  }
  int64_t randint(int64_t lo, int64_t hi) override {
    const auto& d = next("randint");
    EXPECT_EQ(lo, d[1].get<int64_t>()) << "draw " << index_;
    EXPECT_EQ(hi, d[2].get<int64_t>()) << "draw " << index_;
    return d[3].get<int64_t>();
  }
  size_t used() const { return index_; }

 private:
  const nlohmann::json& next(const char* kind) {
    if (index_ >= draws_.size()) {
      ADD_FAILURE() << "more draws than torchvision made";
      static const nlohmann::json zero = nlohmann::json::array({"", 0, 1, 0});
      return zero;
    }
    const auto& d = draws_[index_++];
    EXPECT_EQ(d[0].get<std::string>(), kind) << "draw " << index_ - 1;
    return d;
  }
  const nlohmann::json& draws_;
  size_t index_ = 0;
};

TEST(CropSampler, MatchesTorchvisionGetParamsDrawForDraw) {
  const auto cases = load_cases();
  const auto& rrc = cases.at("random_resized_crop");
  ASSERT_GE(rrc.size(), 50u);
  int fallbacks = 0;
  for (const auto& c : rrc) {
    const int width = c["width"], height = c["height"];
    ReplayedRandom random(c["draws"]);
    const RectI got = sample_random_resized_crop(width, height, {}, random);
    const auto& want = c["crop"];  // (i, j, h, w)
    EXPECT_EQ(got, (RectI{want[1], want[0], want[3], want[2]})) << width << "x" << height;
    EXPECT_EQ(random.used(), c["draws"].size()) << width << "x" << height;
    fallbacks += random.used() == 20 ? 1 : 0;
  }
  EXPECT_GE(fallbacks, 10);  // the centre-crop fallback is exercised too
}

TEST(CropSampler, CenterCropGeometryMatchesTorchvision) {
  const auto cases = load_cases();
  for (const auto& c : cases.at("center_crop")) {
    const int width = c["width"], height = c["height"];
    const CenterCropGeometry g = center_crop_geometry(width, height, 256, 224);
    EXPECT_EQ(g.resized, (Size{c["resized_width"], c["resized_height"]})) << width << "x" << height;
    EXPECT_EQ(g.crop_resized, (RectI{c["left"], c["top"], 224, 224})) << width << "x" << height;
    EXPECT_LE(g.crop_source.x + g.crop_source.width, width);
    EXPECT_LE(g.crop_source.y + g.crop_source.height, height);
  }
}

TEST(CropSampler, RoundHalfEvenIsPythonRound) {
  EXPECT_EQ(round_half_even(0.5), 0);
  EXPECT_EQ(round_half_even(1.5), 2);
  EXPECT_EQ(round_half_even(2.5), 2);
  EXPECT_EQ(round_half_even(16.5), 16);  // CenterCrop of a 257-high image: top 16
  EXPECT_EQ(round_half_even(17.5), 18);
  EXPECT_EQ(round_half_even(2.4999999), 2);
  EXPECT_EQ(round_half_even(7.0), 7);
}

TEST(CropSampler, SeededRandomStaysInsideTheImageAndTheRanges) {
  SeededRandom random(7);
  double min_area = 1, max_area = 0;
  for (int n = 0; n < 2000; ++n) {
    const RectI r = sample_random_resized_crop(500, 375, {}, random);
    ASSERT_GT(r.width, 0);
    ASSERT_GT(r.height, 0);
    ASSERT_GE(r.x, 0);
    ASSERT_GE(r.y, 0);
    ASSERT_LE(r.x + r.width, 500);
    ASSERT_LE(r.y + r.height, 375);
    const double area = static_cast<double>(r.width) * r.height / (500.0 * 375.0);
    min_area = std::min(min_area, area);
    max_area = std::max(max_area, area);
  }
  EXPECT_LT(min_area, 0.1);  // draws reach down to scale 0.08...
  EXPECT_GT(max_area, 0.9);  // ...and up to the whole image
}

}  // namespace
}  // namespace mlos::dataload
