// SPDX-License-Identifier: Apache-2.0
#include "dataload/crop_sampler.h"

#include <algorithm>
#include <cmath>

namespace mlos::dataload {

int round_half_even(double value) {
  // nearbyint rounds in the current mode, which is round-to-nearest-even
  // unless a caller changed it; compute the tie rule explicitly instead.
  const double floor_value = std::floor(value);
  const double frac = value - floor_value;
  double rounded = floor_value;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(floor_value, 2.0) != 0.0)) rounded += 1.0;
  return static_cast<int>(rounded);
}

RectI sample_random_resized_crop(int width, int height, const RandomResizedCropOptions& options,
                                 RandomSource& random) {
  const double area = static_cast<double>(height) * width;
  // torch.tensor(ratio) is float32; log of it in float32.
  const float log_ratio_min = std::log(static_cast<float>(options.ratio_min));
  const float log_ratio_max = std::log(static_cast<float>(options.ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * random.uniform(options.scale_min, options.scale_max);
    const float log_aspect = static_cast<float>(random.uniform(log_ratio_min, log_ratio_max));
    const double aspect = std::exp(log_aspect);  // float32 exp, then .item()
    const int w = round_half_even(std::sqrt(target_area * aspect));
    const int h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = static_cast<int>(random.randint(0, height - h + 1));
      const int left = static_cast<int>(random.randint(0, width - w + 1));
      return RectI{left, top, w, h};
    }
  }
  // Fallback: the whole image, narrowed to the nearest allowed ratio.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int w = width;
  int h = height;
  if (in_ratio < options.ratio_min) {
    h = round_half_even(w / options.ratio_min);
  } else if (in_ratio > options.ratio_max) {
    w = round_half_even(h * options.ratio_max);
  }
  // Python's // floors; both differences are >= 0 here.
  return RectI{(width - w) / 2, (height - h) / 2, w, h};
}

CenterCropGeometry center_crop_geometry(int width, int height, int shorter_side, int crop) {
  CenterCropGeometry g;
  const bool width_is_short = width <= height;
  const int short_edge = width_is_short ? width : height;
  const int long_edge = width_is_short ? height : width;
  // int(requested * long / short): an int product, a true division, truncation.
  const int new_long = static_cast<int>(static_cast<double>(static_cast<int64_t>(shorter_side) * long_edge) /
                                        static_cast<double>(short_edge));
  g.resized = width_is_short ? Size{shorter_side, new_long} : Size{new_long, shorter_side};
  const int top = round_half_even((g.resized.height - crop) / 2.0);
  const int left = round_half_even((g.resized.width - crop) / 2.0);
  g.crop_resized = RectI{left, top, crop, crop};
  const double sx = static_cast<double>(width) / g.resized.width;
  const double sy = static_cast<double>(height) / g.resized.height;
  // (left + crop) * sx can exceed width by a rounding error: clamp.
  const double x1 = std::min((left + crop) * sx, static_cast<double>(width));
  const double y1 = std::min((top + crop) * sy, static_cast<double>(height));
  g.crop_source = RectD{left * sx, top * sy, x1 - left * sx, y1 - top * sy};
  return g;
}

}  // namespace mlos::dataload
