/* SPDX-License-Identifier: Apache-2.0 */
// Crop geometry of the ImageNet training and validation transforms, as
// torchvision computes it.
//
// sample_random_resized_crop mirrors RandomResizedCrop.get_params
// (torchvision/transforms/transforms.py) draw for draw and operation for
// operation, so that fed the numbers torch drew it returns the same
// (top, left, height, width):
//   log_ratio = torch.log(torch.tensor(ratio))            -> float32 log
//   10 times:
//     target_area = area * uniform_(scale)                -> double product
//     aspect = torch.exp(uniform_(log_ratio[0], [1]))     -> float32 exp
//     w = int(round(math.sqrt(target_area * aspect)))     -> half-to-even
//     h = int(round(math.sqrt(target_area / aspect)))
//     if 0 < w <= width and 0 < h <= height:
//       top = randint(0, height - h + 1); left = randint(0, width - w + 1)
//   fallback: centre crop clamped to the ratio range, (height - h) // 2.
// The float32 log/exp use the C library's logf/expf; torch uses its own
// vectorised versions, which can differ in the last bit. That changes w or
// h only when sqrt(...) lands within ~1e-5 of a half integer.
#pragma once

#include "dataload/image_view.h"
#include "dataload/random_source.h"

namespace mlos::dataload {

struct RandomResizedCropOptions {
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
};

// torchvision's (i, j, h, w) as a rectangle: y = i (top), x = j (left).
// Requires width > 0 and height > 0.
RectI sample_random_resized_crop(int width, int height, const RandomResizedCropOptions& options,
                                 RandomSource& random);

// Validation geometry: Resize(shorter_side) then CenterCrop(crop).
struct CenterCropGeometry {
  Size resized;        // the image after Resize (torchvision's rounding)
  RectI crop_resized;  // the centre crop in resized coordinates
  RectD crop_source;   // the same crop in the source image's coordinates
};

// Resize's output size (`_compute_resized_output_size`: the longer side is
// int(shorter_side * long / short), truncated) and CenterCrop's offsets
// (`int(round((h - crop) / 2.0))`, half-to-even). Requires crop <=
// shorter_side; torchvision pads smaller images, which is not supported.
CenterCropGeometry center_crop_geometry(int width, int height, int shorter_side, int crop);

// Python's round() on a double: nearest integer, ties to even.
int round_half_even(double value);

}  // namespace mlos::dataload
