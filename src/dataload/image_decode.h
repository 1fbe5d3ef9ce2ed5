/* SPDX-License-Identifier: Apache-2.0 */
// Format sniffing and dispatch: the one entry point for "decode these bytes".
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "dataload/decode_options.h"
#include "dataload/scratch_buffer.h"

namespace mlos::dataload {

enum class ImageFormat { kUnknown, kJpeg, kPng };

// By magic bytes only (FF D8 FF; the 8-byte PNG signature), never by name.
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

struct ImageHeader {
  ImageFormat format = ImageFormat::kUnknown;
  Size size;
};

// Size from the headers alone (no pixel is decoded). Unknown formats are
// MLOS_ERR_UNSUPPORTED ("unsupported image format").
Result<ImageHeader> read_image_header(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

// The whole image as RGB8 in scratch.pixels.
Result<DecodedImage> decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options,
                                  DecodeScratch& scratch);

}  // namespace mlos::dataload
