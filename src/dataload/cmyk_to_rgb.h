/* SPDX-License-Identifier: Apache-2.0 */
// CMYK to RGB exactly as PIL's convert("RGB") does it (libImaging
// Convert.c cmyk2rgb), applied after undoing the inverted ("Adobe") polarity
// PIL assumes for every CMYK JPEG (JpegImagePlugin: "CMYK;I", "always use
// Adobe polarity" since PIL 0.6). Photoshop, the main source of CMYK JPEGs,
// writes inverted values, so the assumption is right in practice.
#pragma once

#include <cstdint>

namespace mlos::dataload {

// `in` holds width pixels of 4 bytes as stored in the JPEG (inverted);
// `out` receives width RGB pixels.
inline void cmyk_row_to_rgb(const uint8_t* in, uint8_t* out, int width) {
  for (int x = 0; x < width; ++x, in += 4, out += 3) {
    const int nk = in[3];  // 255 - k, k being the un-inverted ink
    for (int c = 0; c < 3; ++c) {
      const int ink = 255 - in[c];
      const int tmp = ink * nk + 128;  // PIL's MULDIV255: rounded ink * nk / 255
      out[c] = static_cast<uint8_t>(nk - (((tmp >> 8) + tmp) >> 8));
    }
  }
}

}  // namespace mlos::dataload
