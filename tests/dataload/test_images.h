/* SPDX-License-Identifier: Apache-2.0 */
// Helpers for the dataload tests: fixture files, in-test JPEG (libjpeg) and
// PNG (libspng) encoders for sizes and layouts the fixtures do not cover, a photo-like
// synthetic image, and pixel comparisons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataload/image_view.h"

namespace mlos::dataload::testing {

std::vector<uint8_t> read_fixture(const std::string& relative);  // under MLOS_FIXTURES_DIR

// FNV-1a 64 of the visible pixels (no row padding), as make_image_fixtures.py.
std::string fnv1a64_hex(ImageView image);

// A smooth, textured RGB image (gradients, a disc, stripes): compresses like
// a photo, and every crop has structure.
std::vector<uint8_t> synthetic_photo(int width, int height);

struct JpegEncoding {
  int quality = 90;
  int h_samp = 2, v_samp = 2;  // luma sampling factors: 2,2 = 4:2:0; 2,1 = 4:2:2; 1,1 = 4:4:4
  bool progressive = false;
  int restart_rows = 0;
  bool grayscale = false;
};
std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, int width, int height, const JpegEncoding& how);

// An 8-bit RGB PNG of `rgb` (libspng's encoder, default compression).
std::vector<uint8_t> encode_png(const std::vector<uint8_t>& rgb, int width, int height);

// A PNG whose every pixel is black, stored as 1-bit grey: a 13000 x 13000
// one is ~20 KB on disk and 507 MB once decoded to RGB8 (the decompression
// bomb of red-team finding 11, in a smaller file).
std::vector<uint8_t> blank_png(int width, int height);

struct Difference {
  double mean_abs = 0;
  int max_abs = 0;
};
// Over a same-sized pair of images (every channel of every pixel).
Difference compare(ImageView a, ImageView b);

// The sub-image of `image` at `r` (no copy).
ImageView sub_view(ImageView image, RectI r);

}  // namespace mlos::dataload::testing
