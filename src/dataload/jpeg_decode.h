/* SPDX-License-Identifier: Apache-2.0 */
// JPEG decoding with libjpeg-turbo's libjpeg API: whole images, and regions
// at a reduced DCT scale for crop-then-resize pipelines.
//
// Output is always RGB8. Grayscale is expanded by libjpeg; CMYK and YCCK
// are decoded to CMYK and converted like PIL's convert("RGB") (Adobe-marked
// files store inverted CMYK, as Photoshop writes them). Decoding mirrors
// PIL's defaults: JDCT_ISLOW and fancy upsampling, so a full decode is
// pixel-identical to PIL's (tests/dataload/jpeg_decode_test.cpp).
//
// Errors never reach libjpeg's default handler (which calls exit()): each
// session installs a setjmp/longjmp error manager and returns libjpeg's
// message in the Error (contract in decode_options.h).
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "dataload/decode_options.h"
#include "dataload/image_view.h"
#include "dataload/scratch_buffer.h"

namespace mlos::dataload {

struct JpegHeader {
  Size size;
  int components = 0;  // 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK
  bool progressive = false;
};

Result<JpegHeader> read_jpeg_header(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

// The whole image at full size, into scratch.pixels.
Result<DecodedImage> decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& options,
                                 DecodeScratch& scratch);

// The DCT scale (numerator over 8) that shrinks a crop of crop_width x
// crop_height the most while leaving it at least target's size in both
// dimensions, so the resize after it never upsamples what the full-size
// image could have supplied. 8 (no scaling) when even that is too small.
//
// By default only 1/8, 2/8 and 4/8 are considered: libjpeg-turbo 2.1 has
// SIMD inverse DCTs for those and for 8/8, while 3/8, 5/8, 6/8 and 7/8 run
// scalar C and decode slower than full size (500x375 q90 photo, whole
// image, ms: 8/8 0.71, 7/8 1.31, 6/8 1.07, 5/8 0.97, 4/8 0.70, 2/8 0.56,
// 1/8 0.43; bench/dataload_decode_bench.cpp).
int choose_dct_scale(double crop_width, double crop_height, Size target, bool simd_scales_only = true);

struct JpegRegionRequest {
  RectD crop;         // in full-size image coordinates; inside the image
  int scale_num = 8;  // decode at scale_num/8 (1..8), see choose_dct_scale
  int margin = 0;     // extra decoded pixels (at the scaled size) around the
                      // crop where the image has them: context for a filter
};

struct DecodedRegion {
  ImageView view;          // the decoded pixels, in scratch.pixels (stride
                           // can exceed width * 3: guard columns)
  RectD crop_in_view;      // request.crop, scaled, in view's coordinates
  RectI decoded;           // where view lies in the scaled full image
  Size scaled_image;       // the whole image's size at this scale
  int scale_num = 8;
  int warnings = 0;
};

// Decodes only the rows and columns the crop needs at the requested scale:
// jpeg_crop_scanline narrows each row (the left edge moves down to an iMCU
// boundary, so `decoded` can start left of the crop) and
// jpeg_skip_scanlines skips rows above it; decoding stops below it. The
// view's pixels equal a full decode at the same scale, bit for bit
// (tests/dataload/jpeg_decode_test.cpp). A
// scaled pixel k covers full-size columns [8k/s, 8(k+1)/s), so crop maps
// to crop * s / 8 exactly. For progressive files libjpeg must still read
// every scan of the whole image; only the inverse DCT and colour work are
// saved. Truncation below the crop goes unnoticed (it is never read).
Result<DecodedRegion> decode_jpeg_region(std::span<const uint8_t> bytes, const JpegRegionRequest& request,
                                         const DecodeOptions& options, DecodeScratch& scratch);

}  // namespace mlos::dataload
