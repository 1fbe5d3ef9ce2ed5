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
int choose_dct_scale(double crop_width, double crop_height, Size target);

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
