// SPDX-License-Identifier: Apache-2.0
#include "dataload/image_decode.h"

#include <cstring>

#include "dataload/jpeg_decode.h"
#include "dataload/png_decode.h"

namespace mlos::dataload {

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kJpeg[] = {0xFF, 0xD8, 0xFF};
  static constexpr uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= sizeof kJpeg && std::memcmp(bytes.data(), kJpeg, sizeof kJpeg) == 0) return ImageFormat::kJpeg;
  if (bytes.size() >= sizeof kPng && std::memcmp(bytes.data(), kPng, sizeof kPng) == 0) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

namespace {
Error unsupported() { return make_error(MLOS_ERR_UNSUPPORTED, "unsupported image format (not JPEG or PNG)"); }
}  // namespace

Result<ImageHeader> read_image_header(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::kJpeg: {
      auto header = read_jpeg_header(bytes, options);
      if (!header.ok()) return header.error();
      return ImageHeader{ImageFormat::kJpeg, header->size};
    }
    case ImageFormat::kPng: {
      auto size = read_png_size(bytes);
      if (!size.ok()) return size.error();
      return ImageHeader{ImageFormat::kPng, *size};
    }
    case ImageFormat::kUnknown:
      break;
  }
  return unsupported();
}

Result<DecodedImage> decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options,
                                  DecodeScratch& scratch) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, options, scratch);
    case ImageFormat::kPng:
      return decode_png(bytes, options, scratch);
    case ImageFormat::kUnknown:
      break;
  }
  return unsupported();
}

}  // namespace mlos::dataload
