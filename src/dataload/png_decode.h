/* SPDX-License-Identifier: Apache-2.0 */
// PNG decoding to RGB8 with libspng.
//
// Why libspng rather than libpng: it decodes straight from a memory buffer
// into any of its output formats (SPNG_FMT_RGB8 covers grey, palette,
// 16-bit and alpha inputs in one call), reports errors as return codes
// instead of libpng's longjmp, bounds image and chunk sizes up front, and
// is continuously fuzzed (OSS-Fuzz). Decoding matches PIL's
// convert("RGB"): alpha and tRNS are dropped, not composited; 16-bit
// samples keep their high byte; gAMA is ignored.
//
// A PNG cut short in its image data is always an error
// (DecodeOptions::truncation_is_error concerns JPEG only): libspng has no
// partial-image mode to fall back on. One missing only its IEND trailer has
// all its pixels and decodes.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "dataload/decode_options.h"
#include "dataload/scratch_buffer.h"

namespace mlos::dataload {

Result<Size> read_png_size(std::span<const uint8_t> bytes);

// The whole image, into scratch.pixels. Contract in decode_options.h.
Result<DecodedImage> decode_png(std::span<const uint8_t> bytes, const DecodeOptions& options,
                                DecodeScratch& scratch);

}  // namespace mlos::dataload
