/* SPDX-License-Identifier: Apache-2.0 */
// What the decoders share: their options and what a decode returns.
//
// Error contract of every decoder in src/dataload: bad input (empty,
// truncated, corrupt, not the format, too large) returns an Error with code
// MLOS_ERR_INVALID_ARGUMENT and the codec's own message; a format or
// feature the decoder does not handle returns MLOS_ERR_UNSUPPORTED. No
// decoder throws (except std::bad_alloc from its scratch), calls exit(), or
// writes to stderr.
#pragma once

#include <cstdint>

#include "dataload/image_view.h"

namespace mlos::dataload {

struct DecodeOptions {
  // A file that ends before its image data does ("Premature end of JPEG
  // file"; a PNG missing IDAT data) is an error. When false, a JPEG decodes
  // with libjpeg's grey fill for the missing part, like PIL's
  // LOAD_TRUNCATED_IMAGES, and the warning is counted.
  bool truncation_is_error = true;
  // Other recoverable corruption libjpeg reports as a warning (extraneous
  // bytes, a damaged entropy segment it resynchronised over) is an error.
  // Off by default: PIL decodes such files too.
  bool corrupt_data_is_error = false;
  // Images with more pixels are refused before any pixel is decoded (PIL's
  // decompression-bomb limit, 2 x 89,478,485).
  int64_t max_pixels = 178956970;
};

struct DecodedImage {
  ImageView view;    // RGB8, in the DecodeScratch the decode was given
  int warnings = 0;  // codec warnings tolerated under the options above
};

}  // namespace mlos::dataload
