// SPDX-License-Identifier: Apache-2.0
#include "dataload/sample_work.h"

#include <cmath>
#include <cstdio>

namespace mlos::dataload {

SampleWork estimate_sample_work(ImageFormat format, Size image, const RectD& crop, int dct_scale_num, Size output,
                                const ResizeOptions& resize) {
  const double scale = format == ImageFormat::kJpeg ? dct_scale_num / 8.0 : 1.0;
  const Size scaled{static_cast<int>(std::ceil(image.width * scale)), static_cast<int>(std::ceil(image.height * scale))};
  SampleWork work;
  work.decode = static_cast<double>(image.width) * image.height * kDecodeWorkPerPixel;
  work.resize = resize_work(crop.width * scale, crop.height * scale, scaled, output, resize);
  return work;
}

std::string describe_over_budget(const SampleWork& work, int64_t budget) {
  char text[200];
  std::snprintf(text, sizeof text,
                "sample needs an estimated %.3g units of work (decoding %.3g, resizing %.3g), over the budget of "
                "%.3g (SampleOptions::max_work): refused before decoding",
                work.total(), work.decode, work.resize, static_cast<double>(budget));
  return text;
}

}  // namespace mlos::dataload
