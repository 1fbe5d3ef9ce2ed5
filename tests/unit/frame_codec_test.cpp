// SPDX-License-Identifier: Apache-2.0
// The control-socket framing: round trips across arbitrary chunking, and
// every malformed frame poisons the decoder with a clear error.
#include "protocol/frame_codec.h"

#include <gtest/gtest.h>

namespace mlos::protocol {
namespace {

std::string frame(FrameKind kind, const nlohmann::json& payload) {
  auto f = encode_frame(kind, payload);
  EXPECT_TRUE(f.ok());
  return f.ok() ? *f : "";
}

TEST(FrameCodecTest, HeaderLayoutIsAsDocumented) {
  std::string f = frame(FrameKind::kReply, {{"id", 1}});
  ASSERT_EQ(f.size(), kFrameHeaderSize + 8);  // {"id":1}
  EXPECT_EQ(f.substr(0, 4), "MLOS");
  EXPECT_EQ(f[4], 1);
  EXPECT_EQ(f[5], 0);  // version 1, little-endian
  EXPECT_EQ(f[6], 2);  // reply
  EXPECT_EQ(f[8], 8);  // length
  EXPECT_EQ(f.substr(12, 4), std::string(4, '\0'));
  EXPECT_EQ(f.substr(16), "{\"id\":1}");
}

TEST(FrameCodecTest, RoundTripWhateverTheChunking) {
  const nlohmann::json a{{"op", "set_phase"}, {"id", 7}, {"phase", 3}};
  const nlohmann::json b{{"op", "status"}, {"id", 8}};
  const std::string stream = frame(FrameKind::kRequest, a) + frame(FrameKind::kRequest, b);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{16}, stream.size()}) {
    FrameDecoder d;
    std::vector<nlohmann::json> got;
    for (size_t at = 0; at < stream.size(); at += chunk) {
      d.feed(std::string_view(stream).substr(at, chunk));
      for (;;) {
        auto f = d.next();
        ASSERT_TRUE(f.ok()) << f.error().message;
        if (!f->has_value()) break;
        got.push_back((*f)->payload);
      }
    }
    EXPECT_EQ(got, (std::vector<nlohmann::json>{a, b})) << "chunk " << chunk;
    EXPECT_EQ(d.buffered(), 0u);
  }
}

TEST(FrameCodecTest, MalformedFramesPoisonTheStream) {
  const std::string good = frame(FrameKind::kRequest, {{"op", "x"}, {"id", 1}});
  auto with = [&](size_t at, char byte) {
    std::string f = good;
    f[at] = byte;
    return f;
  };
  std::string not_object = good.substr(0, 16) + std::string(good.size() - 16, ' ');
  std::string oversized = good;
  oversized[10] = 0x10;  // length 1 MiB + ...
  const std::pair<std::string, const char*> cases[] = {
      {with(0, 'X'), "bad magic"},        {with(4, 2), "protocol version 2"},
      {with(6, 9), "unknown kind 9"},     {with(12, 1), "reserved field"},
      {oversized, "exceeds the limit"},   {not_object, "not a JSON object"},
  };
  for (const auto& [bytes, why] : cases) {
    FrameDecoder d;
    d.feed(bytes);
    auto f = d.next();
    ASSERT_FALSE(f.ok()) << why;
    EXPECT_EQ(f.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(f.error().message.find(why), std::string::npos) << f.error().message;
    d.feed(good);  // poisoned for good: the stream cannot be resynchronised
    EXPECT_FALSE(d.next().ok());
    EXPECT_EQ(d.buffered(), 0u);
  }
}

TEST(FrameCodecTest, SmallerLimitAndEncoderChecks) {
  FrameDecoder d(/*max_payload=*/8);
  d.feed(frame(FrameKind::kRequest, {{"op", "toolong"}, {"id", 1}}));
  EXPECT_FALSE(d.next().ok());
  EXPECT_FALSE(encode_frame(FrameKind::kReply, nlohmann::json::array()).ok());
  EXPECT_FALSE(encode_frame(FrameKind::kReply, {{"k", std::string(100, 'x')}}, 50).ok());
}

TEST(FrameCodecTest, RequestsNeedAnOpAndAnId) {
  EXPECT_EQ(parse_request({FrameKind::kRequest, {{"op", "status"}, {"id", 4}}})->op, "status");
  EXPECT_EQ(parse_request({FrameKind::kRequest, {{"op", "status"}, {"id", 4}}})->id, 4u);
  for (const nlohmann::json& bad : {nlohmann::json{{"id", 1}}, nlohmann::json{{"op", ""}, {"id", 1}},
                                    nlohmann::json{{"op", 3}, {"id", 1}}, nlohmann::json{{"op", "x"}},
                                    nlohmann::json{{"op", "x"}, {"id", -1}}, nlohmann::json{{"op", "x"}, {"id", "1"}}}) {
    EXPECT_FALSE(parse_request({FrameKind::kRequest, bad}).ok()) << bad.dump();
  }
  EXPECT_FALSE(parse_request({FrameKind::kEvent, {{"op", "x"}, {"id", 1}}}).ok());
}

}  // namespace
}  // namespace mlos::protocol
