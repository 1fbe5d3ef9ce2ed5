/* SPDX-License-Identifier: Apache-2.0 */
// The per-sample work budget: how much decoding and resizing one sample
// will cost, estimated from its header before any pixel is decoded, so a
// sample that would hold a decoding thread for minutes is refused at once.
//
// Why: the pixel limit (DecodeOptions::max_pixels) bounds memory, not time.
// A PNG is always decoded whole (no DCT scaling), and the antialiasing
// pre-filter's kernel widens with the shrink factor, so the resize costs
// about pixels x sqrt(pixels). A 13000 x 13000 PNG (169 MP, under the
// limit) compresses to 164 KB or less and held a decoding thread for 14 s
// per validation sample on the development machine, minutes on the
// red-team's (finding 11, issue 47); ordinary photos cost far less.
//
// Unit: one filter tap applied to one RGB pixel, the resize's inner step
// (0.25-0.44 ns each on the 2-CPU development machine, for kernels of 10 to
// 42 taps, through resize_rgb). Decoding one pixel counts
// kDecodeWorkPerPixel units: measured there, PNG 8.8-11 ns per pixel
// (photo-like and flat 3000x2000), JPEG 5.5 ns (baseline, full decode) to
// 13.5 ns (progressive), so 48 units covers each. A JPEG counts every pixel
// of the image at full size whatever its DCT scale: a progressive file's
// scans are all read for any crop (measured 9-10 ns per full-size pixel for
// a 500x500 crop of 8000x6000), and the region's own decode is smaller than
// the whole.
//
// The default budget, 6e9 units: whole samples of ordinary PNGs ran at
// ~0.15 ns per estimated unit there (0.30 s for a 6000x4000 one, validation
// transform), the 13000 x 13000 one at 0.39 ns (14 s), so the budget is
// about 1 to 2.5 s of one core. What it admits, by the estimate
// (tests/dataload/sample_work_test.cpp, the worst of 200 crops):
//   - JPEGs up to 100 MP with DCT scaling (50 MP: 2.4e9), 24 MP without;
//   - PNGs up to 30 MP (24 MP: 2.9e9; 39 MP: 6.3e9, refused for its
//     largest crops);
//   - no PNG above 125 MP: decoding alone is over the budget.
#pragma once

#include <cstdint>
#include <string>

#include "dataload/image_decode.h"
#include "dataload/image_view.h"
#include "dataload/resize.h"

namespace mlos::dataload {

inline constexpr int64_t kDecodeWorkPerPixel = 48;
inline constexpr int64_t kDefaultMaxSampleWork = 6'000'000'000;

struct SampleWork {
  double decode = 0;  // kDecodeWorkPerPixel per pixel decoded
  double resize = 0;  // resize_work() of the crop at its decode scale
  double total() const { return decode + resize; }
};

// What decoding `crop` of an image of `image` size (format from its header)
// at DCT scale dct_scale_num/8 (8 for PNG) and resizing it to `output`
// would cost. Doubles: a header's dimensions (up to 2^31 each) overflow an
// int64 product of pixels and taps.
SampleWork estimate_sample_work(ImageFormat format, Size image, const RectD& crop, int dct_scale_num, Size output,
                                const ResizeOptions& resize);

// "needs an estimated W units of work (decoding D, resizing R), over the
// budget of B": the bad-sample reason, for a refusal.
std::string describe_over_budget(const SampleWork& work, int64_t budget);

}  // namespace mlos::dataload
