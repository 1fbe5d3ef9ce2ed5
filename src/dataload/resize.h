/* SPDX-License-Identifier: Apache-2.0 */
// Antialiased resize of an RGB8 region, close to torchvision's
// resize(antialias=True) / PIL's Image.resize(BILINEAR), on OpenCV imgproc.
//
// Library choice, measured on the 2-core development machine (1 thread, g++ -O2, Debian 12
// packages; mean absolute difference per channel vs PIL 13's
// resize(BILINEAR, reducing_gap=None), µs per 224x224 output):
//
//                          500x375 crop  256x256 (DCT 1/2)  425x425   120x90 (up)
//   OpenCV INTER_LINEAR     2.24 / 94     0.85 / 101        2.22/119  0.20 / 53
//   OpenCV INTER_AREA       0.94 / 1097   0.49 / 655        0.98/1093 0.94 / 50
//   OpenCV blur+LINEAR *    0.47 / 458    0.85 / 163        0.40/420  0.20 / 54
//   libyuv RGBScale Box     2.74 / 68     1.74 / 69         2.74/95   2.15 / 24
//   libyuv planar Box       2.26 / 208    0.86 / 177        2.24/223  1.21 / 67
//   (max abs diff: LINEAR 90, AREA 39, blur+LINEAR 16 on the 500x375 case)
//
// * the default here: a Gaussian pre-filter whose variance, added to the
//   bilinear kernel's, equals that of PIL's triangle filter widened to the
//   scale factor f: sigma^2 = (f^2 - 1) / 6, then INTER_LINEAR. It is the
//   closest to PIL for factors >= ~1.5 and 2.4x faster than INTER_AREA
//   (whose non-integer path is scalar float code). Below ~1.3x the filter
//   is too narrow to matter and it equals plain bilinear (MAD ~0.85 vs
//   PIL's slightly wider triangle). libyuv is the fastest but its RGB box
//   filter degrades to bilinear at non-integer ratios (least faithful);
//   libvips (vips_reduce with a linear kernel) would be close to PIL but
//   pulls in 138 Debian packages and a per-call pipeline setup that costs
//   more than the resize at 224x224, so it was not measured.
//
// Sub-pixel source rectangles: cv::resize takes integer ROIs only. With
// ResizeOptions::exact_subpixel (the default) a rectangle with fractional
// edges is pre-filtered and then sampled with cv::warpAffine at the exact
// source positions (MAD vs PIL's box= resize 0.50 on a 2.5x shrink), for
// ~150 µs more per 224x224 sample than cv::resize; whole-pixel rectangles
// always take cv::resize. Without it the edges are rounded to whole source
// pixels, moving each output edge by up to 0.5 source pixel (0.5 * out / in
// output pixels); measured MAD vs PIL 2.66 on that shrink, and 1.0-3.2 vs
// the exact path on DCT-scaled crops in tests/dataload/sample_decode_test.cpp.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "dataload/image_view.h"
#include "dataload/scratch_buffer.h"

namespace mlos::dataload {

enum class ResizeFilter {
  kAntialiasedLinear,  // Gaussian pre-filter + bilinear (default, see above)
  kArea,               // INTER_AREA when shrinking both ways, else bilinear
  kLinear,             // plain bilinear: fastest, aliases when shrinking
};

struct ResizeOptions {
  ResizeFilter filter = ResizeFilter::kAntialiasedLinear;
  bool exact_subpixel = true;  // kAntialiasedLinear and kLinear only
};

// Resamples src_rect of src (continuous coordinates, inside src, non-empty)
// to fill dst. Pixels of src just outside src_rect are read as filter
// context where they exist, as PIL does for a box= resize; at src's own
// edges the border is replicated. Writes only dst's pixels (dst's stride is
// respected); uses scratch.filtered for the pre-filtered region.
Status resize_rgb(ImageView src, const RectD& src_rect, MutableImageView dst, const ResizeOptions& options,
                  DecodeScratch& scratch);

// How many source pixels of context around the rectangle the default filter
// reads when shrinking by `factor` (source extent / output extent): what a
// region decoder should add as margin.
int resize_context_margin(double factor);

// An upper bound on the work resize_rgb does to resample a source rectangle
// of src_width x src_height (inside a source of source_size) to dst_size,
// in filter taps applied to one RGB pixel (the unit of sample_work.h):
//   - the pre-filter: every pixel of the filtered box (the rectangle plus
//     the kernel's reach, within the source) times (2 r_x + 1) + (2 r_y + 1)
//     taps: the Gaussian is separable, one pass each way;
//   - kArea when shrinking both ways: kAreaWorkPerSourcePixel per pixel of
//     the rectangle (measured 1.1 ms for a 500x375 crop: table above);
//   - the resampling: kResampleWorkPerOutputPixel per output pixel.
// Computed from sizes alone, before any pixel exists.
inline constexpr int64_t kAreaWorkPerSourcePixel = 20;
inline constexpr int64_t kResampleWorkPerOutputPixel = 16;
double resize_work(double src_width, double src_height, Size source_size, Size dst_size,
                   const ResizeOptions& options);

// OpenCV parallelises one resize over its own thread pool; a data loader
// already runs one sample per worker thread, where that pool only
// oversubscribes the CPUs. Call once at start-up (process-wide setting),
// before any filter forbids system calls: it also runs each resize path
// once, so that OpenCV's lazy set-up happens now.
void use_single_threaded_resize();

}  // namespace mlos::dataload
