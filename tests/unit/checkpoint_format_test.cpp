// SPDX-License-Identifier: Apache-2.0
// The checkpoint file format: the footer round-trips, and every kind of
// damage is rejected with a message naming the check that failed.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_format.h"
#include "checkpoint/checkpoint_names.h"

using namespace mlos::checkpoint;

namespace {

std::vector<unsigned char> payload_of(size_t n) {
  std::vector<unsigned char> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 131 + 7);
  return p;
}

// A complete file image: payload then footer.
std::vector<unsigned char> image_of(const std::vector<unsigned char>& payload, uint64_t sequence) {
  Footer f;
  f.payload_length = payload.size();
  f.sequence = sequence;
  f.payload_hash = payload_hash(payload.data(), payload.size());
  const FooterBytes footer = encode_footer(f);
  std::vector<unsigned char> out = payload;
  out.insert(out.end(), footer.begin(), footer.end());
  return out;
}

std::string rejection(const std::vector<unsigned char>& image, size_t size) {
  auto r = verify_checkpoint_image(image.data(), size);
  if (r.ok()) return "accepted";
  EXPECT_EQ(r.error().code, MLOS_ERR_CHECKPOINT_CORRUPT);
  return r.error().message;
}

// Rewrites a footer field and re-seals the footer checksum, as a writer of
// another version (or a buggy one) would.
std::vector<unsigned char> with_footer(const std::vector<unsigned char>& image, const Footer& f) {
  std::vector<unsigned char> out(image.begin(), image.end() - kFooterSize);
  const FooterBytes footer = encode_footer(f);
  out.insert(out.end(), footer.begin(), footer.end());
  return out;
}

}  // namespace

TEST(CheckpointFormat, FooterRoundTrips) {
  Footer f;
  f.payload_length = 0x0123456789abcdefULL;
  f.sequence = 42;
  f.payload_hash = 0xfedcba9876543210ULL;
  const FooterBytes bytes = encode_footer(f);
  EXPECT_EQ(std::memcmp(bytes.data(), "MLOSCKPT", 8), 0);
  EXPECT_EQ(bytes[8], 1);  // version 1, little-endian
  EXPECT_EQ(bytes[16], 0xef);  // payload length, least significant byte first
  auto decoded = decode_footer(bytes.data());
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, f);
}

TEST(CheckpointFormat, WholeImageVerifies) {
  const auto payload = payload_of(10000);
  const auto image = image_of(payload, 7);
  ASSERT_EQ(image.size(), 10000 + kFooterSize);
  auto f = verify_checkpoint_image(image.data(), image.size());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->sequence, 7u);
  EXPECT_EQ(f->payload_length, 10000u);
}

TEST(CheckpointFormat, EveryTruncationIsRejected) {
  const auto image = image_of(payload_of(300), 3);
  for (size_t size = 0; size < image.size(); ++size) {
    const std::string why = rejection(image, size);
    if (size < kFooterSize) {
      EXPECT_NE(why.find("short file"), std::string::npos) << size << ": " << why;
    } else {
      // The footer is gone or misplaced: its magic or checksum fails.
      EXPECT_NE(why, "accepted") << "truncated to " << size;
    }
  }
}

TEST(CheckpointFormat, EveryFlippedByteIsRejected) {
  const auto image = image_of(payload_of(200), 9);
  for (size_t i = 0; i < image.size(); ++i) {
    auto damaged = image;
    damaged[i] ^= 0x01;
    const std::string why = rejection(damaged, damaged.size());
    if (i < 200) {
      EXPECT_EQ(why, "payload checksum mismatch") << "byte " << i;
    } else if (i < 200 + 8) {
      EXPECT_NE(why.find("bad magic"), std::string::npos) << "byte " << i << ": " << why;
    } else {
      EXPECT_EQ(why, "footer checksum mismatch") << "byte " << i;
    }
  }
}

TEST(CheckpointFormat, UnknownVersionIsRejected) {
  const auto image = image_of(payload_of(64), 1);
  auto f = verify_checkpoint_image(image.data(), image.size());
  ASSERT_TRUE(f.ok());
  Footer v2 = *f;
  v2.version = 2;
  const auto damaged = with_footer(image, v2);
  EXPECT_NE(rejection(damaged, damaged.size()).find("unknown format version 2"), std::string::npos);
  Footer flagged = *f;
  flagged.flags = 1;
  const auto with_flags = with_footer(image, flagged);
  EXPECT_NE(rejection(with_flags, with_flags.size()).find("unknown footer flags"), std::string::npos);
}

TEST(CheckpointFormat, LengthMismatchIsRejected) {
  const auto image = image_of(payload_of(64), 1);
  Footer f = *verify_checkpoint_image(image.data(), image.size());
  for (uint64_t wrong : {uint64_t{63}, uint64_t{65}, uint64_t{0}, ~uint64_t{0}}) {
    f.payload_length = wrong;
    const auto damaged = with_footer(image, f);
    EXPECT_NE(rejection(damaged, damaged.size()).find("length mismatch"), std::string::npos) << wrong;
  }
  // A valid file with bytes appended: the footer is no longer at the end.
  auto longer = image;
  longer.push_back(0);
  EXPECT_NE(rejection(longer, longer.size()), "accepted");
}

TEST(CheckpointFormat, EmptyPayloadRoundTrips) {
  const auto image = image_of({}, 5);
  ASSERT_EQ(image.size(), kFooterSize);
  auto f = verify_checkpoint_image(image.data(), image.size());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->payload_length, 0u);
}

TEST(CheckpointNames, FinalAndTempNames) {
  EXPECT_EQ(final_name("ckpt", 42), "ckpt-00000000000000000042.mlosckpt");
  EXPECT_EQ(temp_name("ckpt", 42), "ckpt-00000000000000000042.mlosckpt.tmp");
  EXPECT_EQ(parse_final_name("ckpt", final_name("ckpt", UINT64_MAX)), UINT64_MAX);
  EXPECT_EQ(parse_final_name("ckpt", "ckpt-00000000000000000042.mlosckpt"), 42u);
  EXPECT_FALSE(parse_final_name("ckpt", "ckpt-00000000000000000042.mlosckpt.tmp"));
  EXPECT_FALSE(parse_final_name("ckpt", "ckpt-0000000000000000042.mlosckpt"));    // 19 digits
  EXPECT_FALSE(parse_final_name("ckpt", "ckpt-9999999999999999999x.mlosckpt"));
  EXPECT_FALSE(parse_final_name("ckpt", "ckpt-99999999999999999999.mlosckpt"));   // > UINT64_MAX
  EXPECT_FALSE(parse_final_name("ckpt", "other-00000000000000000042.mlosckpt"));
  EXPECT_FALSE(parse_final_name("ck", "ckpt-00000000000000000042.mlosckpt"));
  EXPECT_TRUE(is_temp_name("ckpt", temp_name("ckpt", 3)));
  EXPECT_FALSE(is_temp_name("ckpt", final_name("ckpt", 3)));
  EXPECT_FALSE(is_temp_name("ckpt", temp_name("other", 3)));
}

TEST(CheckpointNames, PrefixValidation) {
  EXPECT_TRUE(valid_prefix("ckpt"));
  EXPECT_TRUE(valid_prefix("model_v2.run-1"));
  EXPECT_TRUE(valid_prefix(std::string(64, 'a')));
  EXPECT_FALSE(valid_prefix(std::string(65, 'a')));
  EXPECT_FALSE(valid_prefix(""));
  EXPECT_FALSE(valid_prefix("a/b"));
  EXPECT_FALSE(valid_prefix("a b"));
  EXPECT_FALSE(valid_prefix("ck*"));
  // Hidden files: "." and "..", and anything else starting with '.'; a dot
  // further in is fine.
  EXPECT_FALSE(valid_prefix("."));
  EXPECT_FALSE(valid_prefix(".."));
  EXPECT_FALSE(valid_prefix(".model"));
  EXPECT_TRUE(valid_prefix("model."));
}
