// SPDX-License-Identifier: Apache-2.0
// Bad input to every decoder returns an error with the codec's message and
// never crashes, hangs or exits (run under ASan/UBSan too).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataload/image_decode.h"
#include "dataload/jpeg_decode.h"
#include "dataload/png_decode.h"
#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

using testing::read_fixture;

std::vector<uint8_t> prefix(const std::vector<uint8_t>& v, size_t n) { return {v.begin(), v.begin() + n}; }

TEST(DecodeErrors, EmptyAndNonImageInputs) {
  DecodeScratch scratch;
  const std::vector<uint8_t> empty;
  auto j = decode_jpeg(empty, {}, scratch);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(j.error().message.find("Empty input file"), std::string::npos) << j.error().message;
  EXPECT_FALSE(decode_png(empty, {}, scratch).ok());
  auto any = decode_image(empty, {}, scratch);
  ASSERT_FALSE(any.ok());
  EXPECT_EQ(any.error().code, MLOS_ERR_UNSUPPORTED);

  const std::string text = "GIF89a, or any other bytes that are not JPEG or PNG";
  const std::vector<uint8_t> gif(text.begin(), text.end());
  auto u = decode_image(gif, {}, scratch);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code, MLOS_ERR_UNSUPPORTED);
  EXPECT_NE(u.error().message.find("unsupported image format"), std::string::npos);
  auto nj = decode_jpeg(gif, {}, scratch);
  ASSERT_FALSE(nj.ok());
  EXPECT_NE(nj.error().message.find("Not a JPEG file"), std::string::npos) << nj.error().message;
  EXPECT_FALSE(read_image_header(gif).ok());
}

TEST(DecodeErrors, JpegTruncatedAtEveryLengthIsAnError) {
  const auto bytes = read_fixture("images/jpeg_420.jpg");
  DecodeScratch scratch;
  int premature = 0;
  for (size_t n = 1; n + 2 < bytes.size(); n += 7) {  // +2: even EOI cut off
    auto r = decode_jpeg(prefix(bytes, n), {}, scratch);
    ASSERT_FALSE(r.ok()) << "decoded from " << n << " of " << bytes.size() << " bytes";
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
    premature += r.error().message.find("Premature end of JPEG file") != std::string::npos;
  }
  EXPECT_GT(premature, 100);  // past the headers the message is libjpeg's own
}

TEST(DecodeErrors, JpegTruncationCanBeTolerated) {
  const auto bytes = read_fixture("images/photo_420.jpg");
  DecodeOptions lenient;
  lenient.truncation_is_error = false;
  DecodeScratch scratch;
  auto r = decode_jpeg(prefix(bytes, bytes.size() * 2 / 3), lenient, scratch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->view.width, 157);
  EXPECT_GE(r->warnings, 1);
  // libjpeg fills what is missing with mid-grey-ish DC: the last row is flat.
  const uint8_t* last = r->view.row(r->view.height - 1);
  EXPECT_EQ(last[0], last[3 * 100]);
}

TEST(DecodeErrors, ProgressiveAndRegionTruncationAreErrors) {
  const auto progressive = read_fixture("images/jpeg_progressive.jpg");
  DecodeScratch scratch;
  for (size_t n : {size_t{200}, progressive.size() / 2, progressive.size() - 3}) {
    EXPECT_FALSE(decode_jpeg(prefix(progressive, n), {}, scratch).ok()) << n;
    EXPECT_FALSE(decode_jpeg_region(prefix(progressive, n), JpegRegionRequest{{10, 10, 20, 20}, 8, 0}, {}, scratch).ok())
        << n;
  }
}

TEST(DecodeErrors, CorruptedJpegBytesNeverCrash) {
  // Overwrite bytes at every position (headers and entropy data) with three
  // patterns; each decode either succeeds with the right size or returns
  // an error. Sanitizer builds make "never crashes" a strong statement.
  const auto bytes = read_fixture("images/jpeg_420.jpg");
  DecodeScratch scratch;
  int errors = 0, decoded = 0;
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (uint8_t value : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x5A}}) {
      auto corrupt = bytes;
      corrupt[pos] = value;
      auto r = decode_jpeg(corrupt, {}, scratch);
      if (r.ok()) {
        ++decoded;
        EXPECT_GT(r->view.width, 0);
      } else {
        ++errors;
        EXPECT_FALSE(r.error().message.empty());
      }
      auto region = decode_jpeg_region(corrupt, JpegRegionRequest{{5, 5, 30, 20}, 4, 1}, {}, scratch);
      if (!region.ok()) {
        EXPECT_FALSE(region.error().message.empty());
      }
    }
  }
  EXPECT_GT(errors, 50);
  EXPECT_GT(decoded, 1000);  // most entropy-data damage decodes (to garbage), like PIL
}

TEST(DecodeErrors, CorruptDataWarningsCanBeMadeFatal) {
  // Damage inside the entropy-coded data: libjpeg warns and resynchronises.
  auto bytes = testing::encode_jpeg(testing::synthetic_photo(96, 64), 96, 64, {90, 2, 2, false, 1});
  bytes[bytes.size() / 2] = 0xFF;
  bytes[bytes.size() / 2 + 1] = 0xD3;  // a stray restart marker
  DecodeScratch scratch;
  auto lenient = decode_jpeg(bytes, {}, scratch);
  ASSERT_TRUE(lenient.ok()) << lenient.error().message;
  EXPECT_GE(lenient->warnings, 1);
  DecodeOptions strict;
  strict.corrupt_data_is_error = true;
  auto r = decode_jpeg(bytes, strict, scratch);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("Corrupt JPEG data"), std::string::npos) << r.error().message;
}

TEST(DecodeErrors, OversizedImagesAreRefusedBeforeDecoding) {
  DecodeOptions small;
  small.max_pixels = 67 * 45 - 1;
  DecodeScratch scratch;
  auto j = decode_jpeg(read_fixture("images/jpeg_420.jpg"), small, scratch);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("max_pixels"), std::string::npos);
  EXPECT_EQ(scratch.pixels.capacity(), 0u);  // nothing was allocated
  small.max_pixels = 40 * 30 - 1;
  EXPECT_FALSE(decode_png(read_fixture("images/png_rgb.png"), small, scratch).ok());
}

TEST(DecodeErrors, PngTruncatedOrCorruptedIsAnError) {
  const auto bytes = read_fixture("images/png_rgb.png");
  DecodeScratch scratch;
  // Up to the end of the last IDAT: missing only the 12-byte IEND trailer,
  // every pixel is there and the image decodes.
  ASSERT_TRUE(decode_png(prefix(bytes, bytes.size() - 12), {}, scratch).ok());
  for (size_t n = 1; n < bytes.size() - 12; n += 13) {
    auto r = decode_png(prefix(bytes, n), {}, scratch);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
  }
  int errors = 0, positions = 0;
  for (size_t pos = 8; pos < bytes.size(); pos += 3, ++positions) {
    auto corrupt = bytes;
    corrupt[pos] ^= 0x55;
    auto r = decode_png(corrupt, {}, scratch);
    errors += !r.ok();
  }
  // Damage to the trailer (IEND, never read) or to an ancillary chunk
  // (skipped) decodes; everything in IHDR and IDAT is caught by its CRC.
  EXPECT_GT(errors, positions * 95 / 100);
}

}  // namespace
}  // namespace mlos::dataload
