// SPDX-License-Identifier: Apache-2.0
#include "dataload/png_decode.h"

#include <memory>
#include <new>
#include <string>

#include <spng.h>

namespace mlos::dataload {
namespace {

struct ContextDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using Context = std::unique_ptr<spng_ctx, ContextDeleter>;

Error spng_failure(const char* what, int rc) {
  return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("PNG ") + what + ": " + spng_strerror(rc));
}

// A context reading `bytes`, with the limits every decode uses.
Result<Context> open(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "PNG: empty input");
  Context ctx(spng_ctx_new(0));
  if (!ctx) return make_error(MLOS_ERR_NO_MEMORY, "PNG: cannot allocate a decoder context");
  // Ancillary chunks (text, ICC profiles) are never used: cap what libspng
  // buffers for them so a crafted file cannot make it allocate gigabytes.
  spng_set_chunk_limits(ctx.get(), 1u << 26, 1u << 26);
  if (int rc = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size()); rc != 0) {
    return spng_failure("input", rc);
  }
  return ctx;
}

}  // namespace

Result<Size> read_png_size(std::span<const uint8_t> bytes) {
  auto ctx = open(bytes);
  if (!ctx.ok()) return ctx.error();
  spng_ihdr ihdr{};
  if (int rc = spng_get_ihdr(ctx->get(), &ihdr); rc != 0) return spng_failure("header", rc);
  return Size{static_cast<int>(ihdr.width), static_cast<int>(ihdr.height)};
}

Result<DecodedImage> decode_png(std::span<const uint8_t> bytes, const DecodeOptions& options,
                                DecodeScratch& scratch) {
  auto ctx = open(bytes);
  if (!ctx.ok()) return ctx.error();
  spng_ihdr ihdr{};
  if (int rc = spng_get_ihdr(ctx->get(), &ihdr); rc != 0) return spng_failure("header", rc);
  if (static_cast<int64_t>(ihdr.width) * ihdr.height > options.max_pixels) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "PNG: image has more pixels than DecodeOptions::max_pixels");
  }
  size_t bytes_out = 0;
  if (int rc = spng_decoded_image_size(ctx->get(), SPNG_FMT_RGB8, &bytes_out); rc != 0) {
    return spng_failure("output size", rc);
  }
  uint8_t* pixels = nullptr;
  try {
    pixels = scratch.pixels.ensure(bytes_out);
  } catch (const std::bad_alloc&) {
    return make_error(MLOS_ERR_NO_MEMORY, "PNG: out of memory for the decoded image");
  }
  if (int rc = spng_decode_image(ctx->get(), pixels, bytes_out, SPNG_FMT_RGB8, 0); rc != 0) {
    return spng_failure("decode", rc);
  }
  const int width = static_cast<int>(ihdr.width);
  return DecodedImage{ImageView{pixels, width, static_cast<int>(ihdr.height),
                                static_cast<size_t>(width) * kRgbChannels},
                      0};
}

}  // namespace mlos::dataload
