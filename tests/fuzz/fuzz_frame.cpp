// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the control-socket frame decoder, fed in chunks whose sizes
// come from the input. Properties: never crashes or throws; once it reports
// an error it keeps reporting it; every frame it returns re-encodes to bytes
// that decode to the same payload.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/frame_codec.h"

using namespace mlos::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 32;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  FrameDecoder d(/*max_payload=*/4096);
  bool failed = false;
  while (!rest.empty()) {
    d.feed(rest.substr(0, chunk));
    rest.remove_prefix(std::min(chunk, rest.size()));
    for (;;) {
      auto f = d.next();
      if (!f.ok()) {
        failed = true;
        break;
      }
      if (failed) abort();  // errors must be sticky
      if (!f->has_value()) break;
      auto again = encode_frame((*f)->kind, (*f)->payload, 1 << 20);
      if (!again.ok()) abort();
      FrameDecoder check(1 << 20);
      check.feed(*again);
      auto back = check.next();
      if (!back.ok() || !back->has_value() || (*back)->payload != (*f)->payload) abort();
      (void)parse_request(**f);
    }
    if (failed) break;
  }
  return 0;
}
