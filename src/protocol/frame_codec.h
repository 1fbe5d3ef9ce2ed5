/* SPDX-License-Identifier: Apache-2.0 */
// The control socket's wire format (mlosd <-> libmlos/mlos), version 1:
//
//   offset size  field
//        0    4  magic "MLOS" (bytes 'M','L','O','S')
//        4    2  version, little-endian (1)
//        6    2  kind: 1 request, 2 reply, 3 event
//        8    4  payload length in bytes, little-endian (<= max_payload)
//       12    4  reserved, must be 0
//       16    n  payload: one JSON object, UTF-8
//
// Requests carry {"op": "<name>", "id": <uint>, ...}; replies echo "id".
// Pure logic: no sockets here. See docs/protocol.md.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::protocol {

constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kFrameHeaderSize = 16;
// The largest payload each direction carries (docs/protocol.md). mlosd
// reads every request with this limit, so a client cannot make it buffer
// more than that per connection; requests are small (the longest field is
// a job's label). Replies can be larger: a status page lists up to 512 jobs.
// Clients encode requests with kMaxRequestPayload, so an oversized one is
// refused before it is sent instead of costing the connection.
constexpr uint32_t kMaxRequestPayload = 64 * 1024;
constexpr uint32_t kMaxReplyPayload = 1 << 20;
constexpr uint32_t kDefaultMaxPayload = kMaxReplyPayload;

enum class FrameKind : uint16_t { kRequest = 1, kReply = 2, kEvent = 3 };

struct Frame {
  FrameKind kind = FrameKind::kRequest;
  nlohmann::json payload;  // always an object
};

// The bytes of one frame. INVALID_ARGUMENT if the payload is not an object
// or serialises to more than `max_payload` bytes.
Result<std::string> encode_frame(FrameKind kind, const nlohmann::json& payload,
                                 uint32_t max_payload = kDefaultMaxPayload);

// Splits a byte stream into frames. Bytes may arrive in any chunks. The
// first malformed frame (bad magic, another version, unknown kind, non-zero
// reserved field, length over the limit, payload that is not a JSON object)
// poisons the decoder: that error is returned from then on, and the caller
// must close the connection, since the stream cannot be resynchronised.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_payload = kDefaultMaxPayload) : max_payload_(max_payload) {}

  void feed(std::string_view bytes);
  // The next complete frame, nullopt if more bytes are needed, or the error.
  Result<std::optional<Frame>> next();
  // Bytes received but not yet part of a returned frame.
  size_t buffered() const { return buffer_.size(); }

 private:
  uint32_t max_payload_;
  std::string buffer_;
  std::optional<Error> poisoned_;
};

struct Request {
  std::string op;
  uint64_t id = 0;
  nlohmann::json args;  // the whole payload
};

// A request frame's op and id. INVALID_ARGUMENT if it is not a request, or
// "op" is not a non-empty string, or "id" is not an unsigned integer.
Result<Request> parse_request(const Frame& frame);

}  // namespace mlos::protocol
