// SPDX-License-Identifier: Apache-2.0
#include "protocol/frame_codec.h"

#include "core/json_fields.h"

namespace mlos::protocol {

namespace {

constexpr char kMagic[4] = {'M', 'L', 'O', 'S'};

void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}
uint16_t get_u16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) | (static_cast<unsigned char>(b[at + 1]) << 8));
}

}  // namespace

Result<std::string> encode_frame(FrameKind kind, const nlohmann::json& payload, uint32_t max_payload) {
  if (!payload.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "frame payload must be a JSON object");
  // Invalid UTF-8 in strings is replaced rather than thrown on.
  const std::string body = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (body.size() > max_payload) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "frame payload of " + std::to_string(body.size()) +
                                                     " bytes exceeds the limit of " + std::to_string(max_payload));
  }
  std::string out(kMagic, 4);
  put_u16(out, kProtocolVersion);
  put_u16(out, static_cast<uint16_t>(kind));
  put_u32(out, static_cast<uint32_t>(body.size()));
  put_u32(out, 0);
  return out + body;
}

void FrameDecoder::feed(std::string_view bytes) {
  if (!poisoned_) buffer_.append(bytes);
}

Result<std::optional<Frame>> FrameDecoder::next() {
  if (poisoned_) return *poisoned_;
  if (buffer_.size() < kFrameHeaderSize) return std::optional<Frame>();
  auto poison = [&](std::string why) -> Error {
    poisoned_ = make_error(MLOS_ERR_INVALID_ARGUMENT, "malformed frame: " + why);
    buffer_.clear();
    return *poisoned_;
  };
  if (buffer_.compare(0, 4, kMagic, 4) != 0) return poison("bad magic");
  const uint16_t version = get_u16(buffer_, 4);
  if (version != kProtocolVersion) {
    return poison("protocol version " + std::to_string(version) + ", this side speaks " +
                  std::to_string(kProtocolVersion));
  }
  const uint16_t kind = get_u16(buffer_, 6);
  if (kind < 1 || kind > 3) return poison("unknown kind " + std::to_string(kind));
  const uint32_t length = get_u32(buffer_, 8);
  if (get_u32(buffer_, 12) != 0) return poison("reserved field is not zero");
  if (length > max_payload_) {
    return poison("payload of " + std::to_string(length) + " bytes exceeds the limit of " +
                  std::to_string(max_payload_));
  }
  if (buffer_.size() < kFrameHeaderSize + length) return std::optional<Frame>();
  nlohmann::json payload =
      nlohmann::json::parse(buffer_.begin() + kFrameHeaderSize, buffer_.begin() + kFrameHeaderSize + length, nullptr,
                            /*allow_exceptions=*/false);
  if (payload.is_discarded() || !payload.is_object()) return poison("payload is not a JSON object");
  buffer_.erase(0, kFrameHeaderSize + length);
  return std::optional<Frame>(Frame{static_cast<FrameKind>(kind), std::move(payload)});
}

Result<Request> parse_request(const Frame& frame) {
  if (frame.kind != FrameKind::kRequest) return make_error(MLOS_ERR_INVALID_ARGUMENT, "not a request frame");
  const auto op = frame.payload.find("op");
  const auto id = frame.payload.find("id");
  if (op == frame.payload.end() || !op->is_string() || op->get_ref<const std::string&>().empty()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "request has no \"op\" string");
  }
  if (id == frame.payload.end() || !is_non_negative_integer(*id)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "request has no unsigned integer \"id\"");
  }
  return Request{op->get<std::string>(), id->get<uint64_t>(), frame.payload};
}

}  // namespace mlos::protocol
