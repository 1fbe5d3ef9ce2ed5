// SPDX-License-Identifier: Apache-2.0
#include "dataload/jpeg_decode.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <jerror.h>

#include "dataload/cmyk_to_rgb.h"

namespace mlos::dataload {
namespace {

// libjpeg reports through these callbacks. error_exit must not return, so
// it longjmps to the session's setjmp; emit_message does the same for the
// warnings the options make fatal.
struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err to this
  std::jmp_buf jump;
  bool truncation_is_error = true;
  bool corrupt_data_is_error = false;
  int warnings = 0;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // trace messages: never printed
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  ++err->warnings;
  const bool truncated = cinfo->err->msg_code == JWRN_JPEG_EOF;
  if (truncated ? err->truncation_is_error : err->corrupt_data_is_error) {
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
  }
}

void on_output_message(j_common_ptr) {}  // never to stderr

// What one libjpeg session is asked to do. Plain data only: the session
// function longjmps within its own frame, which must hold nothing with a
// destructor created after setjmp.
struct SessionRequest {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  const DecodeOptions* options = nullptr;
  bool header_only = false;
  bool region = false;  // false: whole image at scale 8/8
  RectD crop;
  int scale_num = 8;
  int margin = 0;
};

struct SessionResult {
  JpegHeader header;
  RectI decoded;  // the exact pixels, in scaled-image coordinates
  size_t stride = 0;
  int view_offset = 0;  // bytes from scratch.pixels to decoded's first pixel
  Size scaled_image;
  int warnings = 0;
  bool failed = false;
  int code = MLOS_ERR_INVALID_ARGUMENT;
  char message[JMSG_LENGTH_MAX] = {};
};

bool crop_inside(const RectD& crop, Size image) {
  return crop.width > 0 && crop.height > 0 && crop.x >= 0 && crop.y >= 0 &&
         crop.x + crop.width <= image.width && crop.y + crop.height <= image.height;
}

// scratch.ensure without an exception unwinding through the session.
uint8_t* try_ensure(ScratchBuffer& buffer, size_t bytes) {
  try {
    return buffer.ensure(bytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void fail(SessionResult& result, int code, const char* message) {
  result.failed = true;
  result.code = code;
  std::snprintf(result.message, sizeof result.message, "%s", message);
}

// Reads the next `count` output rows into `out` (3 bytes per pixel),
// converting CMYK rows through `cmyk_row`.
void read_rows(jpeg_decompress_struct& cinfo, bool cmyk, int count, uint8_t* out,
               size_t stride, uint8_t* cmyk_row) {
  for (int y = 0; y < count; ++y) {
    uint8_t* dst = out + static_cast<size_t>(y) * stride;
    JSAMPROW row = cmyk ? cmyk_row : dst;
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
      // Only suspending sources return 0 rows; a memory source never does.
      ERREXIT(&cinfo, JERR_BAD_STATE);
    }
    if (cmyk) cmyk_row_to_rgb(cmyk_row, dst, static_cast<int>(cinfo.output_width));
  }
}

void run_session(const SessionRequest& rq, DecodeScratch& scratch, SessionResult& result) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);  // jpeg_destroy on a failed create is then a no-op
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error_exit;
  err.pub.emit_message = on_emit_message;
  err.pub.output_message = on_output_message;
  err.truncation_is_error = rq.options->truncation_is_error;
  err.corrupt_data_is_error = rq.options->corrupt_data_is_error;

  if (setjmp(err.jump) != 0) {
    result.warnings = err.warnings;
    fail(result, MLOS_ERR_INVALID_ARGUMENT, err.message);
    jpeg_destroy_decompress(&cinfo);
    return;
  }
  jpeg_create_decompress(&cinfo);
  // libjpeg rejects an empty buffer itself (JERR_INPUT_EMPTY).
  jpeg_mem_src(&cinfo, rq.bytes, static_cast<unsigned long>(rq.size));
  jpeg_read_header(&cinfo, TRUE);
  result.header.size = Size{static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height)};
  result.header.components = cinfo.num_components;
  result.header.progressive = cinfo.progressive_mode != 0;
  if (static_cast<int64_t>(cinfo.image_width) * cinfo.image_height > rq.options->max_pixels) {
    fail(result, MLOS_ERR_INVALID_ARGUMENT, "image has more pixels than DecodeOptions::max_pixels");
  } else if (rq.header_only) {
    // done
  } else if (rq.region && !crop_inside(rq.crop, result.header.size)) {
    fail(result, MLOS_ERR_INVALID_ARGUMENT, "crop is empty or outside the image");
  } else {
    bool cmyk = false;
    switch (cinfo.jpeg_color_space) {
      case JCS_GRAYSCALE:
      case JCS_YCbCr:
      case JCS_RGB:
        cinfo.out_color_space = JCS_RGB;  // libjpeg-turbo expands grey itself
        break;
      case JCS_CMYK:
      case JCS_YCCK:
        cinfo.out_color_space = JCS_CMYK;  // libjpeg converts YCCK to CMYK
        cmyk = true;
        break;
      default:
        fail(result, MLOS_ERR_UNSUPPORTED, "JPEG colour space is not grey, YCbCr, RGB, CMYK or YCCK");
        break;
    }
    if (!result.failed) {
      cinfo.dct_method = JDCT_ISLOW;     // PIL's default: exact, not the fast integer IDCT
      cinfo.do_fancy_upsampling = TRUE;  // PIL's default: triangle chroma upsampling
      cinfo.scale_num = static_cast<unsigned>(rq.scale_num);
      cinfo.scale_denom = 8;
      jpeg_start_decompress(&cinfo);
      const int out_w = static_cast<int>(cinfo.output_width);
      const int out_h = static_cast<int>(cinfo.output_height);
      result.scaled_image = Size{out_w, out_h};
      int x_lo = 0, x_hi = out_w, y_lo = 0, y_hi = out_h;
      if (rq.region) {
        const double s = rq.scale_num / 8.0;
        x_lo = std::clamp(static_cast<int>(std::floor(rq.crop.x * s)) - rq.margin, 0, out_w - 1);
        y_lo = std::clamp(static_cast<int>(std::floor(rq.crop.y * s)) - rq.margin, 0, out_h - 1);
        x_hi = std::clamp(static_cast<int>(std::ceil((rq.crop.x + rq.crop.width) * s)) + rq.margin, x_lo + 1, out_w);
        y_hi = std::clamp(static_cast<int>(std::ceil((rq.crop.y + rq.crop.height) * s)) + rq.margin, y_lo + 1, out_h);
      }
      // Fancy upsampling treats the ends of a cropped row as the image's
      // edges, so the first and last decoded columns of a crop can differ
      // from a full decode (by up to ~8 levels in 4:2:x files). Decode one
      // guard column beyond each end and leave it out of the view: what the
      // caller sees then equals the full decode exactly.
      const int guard_lo = std::max(0, x_lo - 1);
      const int guard_hi = std::min(out_w, x_hi + 1);
      JDIMENSION x_offset = static_cast<JDIMENSION>(guard_lo);
      JDIMENSION width = static_cast<JDIMENSION>(guard_hi - guard_lo);
      if (rq.region && width < cinfo.output_width) {
        jpeg_crop_scanline(&cinfo, &x_offset, &width);  // widens to iMCU boundaries
      }
      const int trim_left = x_offset > 0 ? 1 : 0;
      const int trim_right = static_cast<int>(x_offset + width) < out_w ? 1 : 0;
      const int rows = y_hi - y_lo;
      const size_t stride = static_cast<size_t>(width) * kRgbChannels;
      uint8_t* pixels = try_ensure(scratch.pixels, stride * static_cast<size_t>(rows));
      uint8_t* cmyk_row = cmyk ? try_ensure(scratch.row, static_cast<size_t>(width) * 4) : nullptr;
      if (pixels == nullptr || (cmyk && cmyk_row == nullptr)) {
        fail(result, MLOS_ERR_NO_MEMORY, "out of memory for the decoded pixels");
        jpeg_destroy_decompress(&cinfo);
        return;
      }
      if (y_lo > 0 && jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y_lo)) != static_cast<JDIMENSION>(y_lo)) {
        ERREXIT(&cinfo, JERR_BAD_STATE);
      }
      read_rows(cinfo, cmyk, rows, pixels, stride, cmyk_row);
      result.decoded = RectI{static_cast<int>(x_offset) + trim_left, y_lo,
                             static_cast<int>(width) - trim_left - trim_right, rows};
      result.stride = stride;
      result.view_offset = trim_left * kRgbChannels;
      if (cinfo.output_scanline == cinfo.output_height) {
        jpeg_finish_decompress(&cinfo);  // reads to EOI: trailing truncation is seen
      }
    }
  }
  result.warnings = err.warnings;
  jpeg_destroy_decompress(&cinfo);
}

Error session_error(const SessionResult& result, const char* what) {
  return make_error(result.code, std::string(what) + ": " + result.message);
}

}  // namespace

Result<JpegHeader> read_jpeg_header(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  SessionRequest rq;
  rq.bytes = bytes.data();
  rq.size = bytes.size();
  rq.options = &options;
  rq.header_only = true;
  DecodeScratch unused;
  SessionResult result;
  run_session(rq, unused, result);
  if (result.failed) return session_error(result, "JPEG header");
  return result.header;
}

Result<DecodedImage> decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& options,
                                 DecodeScratch& scratch) {
  SessionRequest rq;
  rq.bytes = bytes.data();
  rq.size = bytes.size();
  rq.options = &options;
  SessionResult result;
  run_session(rq, scratch, result);
  if (result.failed) return session_error(result, "JPEG decode");
  const Size size = result.scaled_image;
  return DecodedImage{ImageView{scratch.pixels.data(), size.width, size.height,
                                static_cast<size_t>(size.width) * kRgbChannels},
                      result.warnings};
}

int choose_dct_scale(double crop_width, double crop_height, Size target, bool simd_scales_only) {
  for (int s = 1; s < 8; s = simd_scales_only ? s * 2 : s + 1) {
    if (crop_width * s / 8.0 >= target.width && crop_height * s / 8.0 >= target.height) return s;
  }
  return 8;
}

Result<DecodedRegion> decode_jpeg_region(std::span<const uint8_t> bytes, const JpegRegionRequest& request,
                                         const DecodeOptions& options, DecodeScratch& scratch) {
  if (request.scale_num < 1 || request.scale_num > 8) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "JPEG region: scale_num must be 1..8");
  }
  if (request.margin < 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "JPEG region: negative margin");
  // The crop is checked against the image size inside the session, right
  // after the header: a separate header pass would parse it twice.
  SessionRequest rq;
  rq.bytes = bytes.data();
  rq.size = bytes.size();
  rq.options = &options;
  rq.region = true;
  rq.crop = request.crop;
  rq.scale_num = request.scale_num;
  rq.margin = request.margin;
  SessionResult result;
  run_session(rq, scratch, result);
  if (result.failed) return session_error(result, "JPEG region");
  DecodedRegion region;
  region.decoded = result.decoded;
  region.view = ImageView{scratch.pixels.data() + result.view_offset, result.decoded.width, result.decoded.height,
                          result.stride};
  const double s = request.scale_num / 8.0;
  region.crop_in_view = RectD{request.crop.x * s - result.decoded.x, request.crop.y * s - result.decoded.y,
                              request.crop.width * s, request.crop.height * s};
  region.scaled_image = result.scaled_image;
  region.scale_num = request.scale_num;
  region.warnings = result.warnings;
  return region;
}

}  // namespace mlos::dataload
