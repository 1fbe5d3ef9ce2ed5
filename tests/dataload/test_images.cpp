// SPDX-License-Identifier: Apache-2.0
#include "dataload/test_images.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <stdexcept>

#include <jpeglib.h>
#include <spng.h>

namespace mlos::dataload::testing {

std::vector<uint8_t> read_fixture(const std::string& relative) {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/" + relative, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + relative);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string fnv1a64_hex(ImageView image) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* row = image.row(y);
    for (int i = 0; i < image.width * kRgbChannels; ++i) {
      h ^= row[i];
      h *= 0x100000001B3ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::vector<uint8_t> synthetic_photo(int width, int height) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  const double cx = width * 0.6, cy = height * 0.4, radius = std::min(width, height) * 0.3;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      const double inside = std::hypot(x - cx, y - cy) < radius ? 1.0 : 0.0;
      const double stripes = 0.5 + 0.5 * std::sin((x + 0.5 * y) * 0.35);
      p[0] = static_cast<uint8_t>(40 + 150.0 * x / width + 60 * inside);
      p[1] = static_cast<uint8_t>(30 + 120.0 * y / height + 80 * stripes * (1 - inside));
      p[2] = static_cast<uint8_t>(200 - 120.0 * (x + y) / (width + height) - 50 * inside);
    }
  }
  return rgb;
}

std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int width, int height, const JpegEncoding& how) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);  // test inputs are valid: default exit() is acceptable here
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, how.quality, TRUE);
  if (how.grayscale) {
    jpeg_set_colorspace(&cinfo, JCS_GRAYSCALE);
  } else {
    cinfo.comp_info[0].h_samp_factor = how.h_samp;
    cinfo.comp_info[0].v_samp_factor = how.v_samp;
  }
  if (how.progressive) jpeg_simple_progression(&cinfo);
  cinfo.restart_in_rows = how.restart_rows;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&rgb[static_cast<size_t>(cinfo.next_scanline) * width * 3]);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes(out, out + size);
  std::free(out);
  return bytes;
}

namespace {

// Encodes `image` (rows in PNG's own layout for `ihdr`) with libspng.
std::vector<uint8_t> spng_encode(const spng_ihdr& ihdr, const std::vector<uint8_t>& image) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  if (ctx == nullptr) throw std::runtime_error("spng_ctx_new failed");
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr h = ihdr;
  int rc = spng_set_ihdr(ctx, &h);
  if (rc == 0) rc = spng_encode_image(ctx, image.data(), image.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  size_t size = 0;
  void* png = rc == 0 ? spng_get_png_buffer(ctx, &size, &rc) : nullptr;
  spng_ctx_free(ctx);
  if (png == nullptr) throw std::runtime_error(std::string("PNG encoding failed: ") + spng_strerror(rc));
  std::vector<uint8_t> out(static_cast<uint8_t*>(png), static_cast<uint8_t*>(png) + size);
  std::free(png);
  return out;
}

}  // namespace

std::vector<uint8_t> encode_png(const std::vector<uint8_t>& rgb, int width, int height) {
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(width);
  ihdr.height = static_cast<uint32_t>(height);
  ihdr.bit_depth = 8;
  ihdr.color_type = SPNG_COLOR_TYPE_TRUECOLOR;
  return spng_encode(ihdr, rgb);
}

std::vector<uint8_t> blank_png(int width, int height) {
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(width);
  ihdr.height = static_cast<uint32_t>(height);
  ihdr.bit_depth = 1;
  ihdr.color_type = SPNG_COLOR_TYPE_GRAYSCALE;
  const size_t row_bytes = (static_cast<size_t>(width) + 7) / 8;
  return spng_encode(ihdr, std::vector<uint8_t>(row_bytes * height, 0));
}

Difference compare(ImageView a, ImageView b) {
  Difference d;
  if (a.width != b.width || a.height != b.height) return Difference{1e9, 255};
  double sum = 0;
  for (int y = 0; y < a.height; ++y) {
    for (int i = 0; i < a.width * kRgbChannels; ++i) {
      const int diff = std::abs(int(a.row(y)[i]) - int(b.row(y)[i]));
      sum += diff;
      d.max_abs = std::max(d.max_abs, diff);
    }
  }
  d.mean_abs = sum / (static_cast<double>(a.width) * a.height * kRgbChannels);
  return d;
}

ImageView sub_view(ImageView image, RectI r) {
  return ImageView{image.data + static_cast<size_t>(r.y) * image.stride + static_cast<size_t>(r.x) * kRgbChannels,
                   r.width, r.height, image.stride};
}

}  // namespace mlos::dataload::testing
