/* SPDX-License-Identifier: Apache-2.0 */
// Where one TCPStore request ends, found as its bytes arrive: the scan
// resumes where the last one stopped, so a request of 131,072 keys that
// arrives in a thousand pieces is scanned once, not once per piece. The
// limits (tcp_store.h: key and value lengths, keys per request, request
// size) are enforced as soon as the length that breaks one arrives. The
// server parses a request only once it is whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlos::collectives {

class TcpStoreFrame {
 public:
  enum class State { kWhole, kPartial, kRefused };
  // Scans on through the request that starts at `p`, of which `n` bytes
  // are buffered (the same start as in earlier calls; `n` only grows).
  State scan(const char* p, size_t n);
  // kWhole: the request's length.
  size_t bytes() const { return pos_; }
  // kPartial: scanning goes on once this many bytes (from `p`) are there.
  size_t need() const { return need_; }
  // kRefused: which rule the request breaks.
  const std::string& refused() const { return why_; }
  // Ready for the next request.
  void reset() { *this = TcpStoreFrame(steps_); }
  // Fields scanned since construction (a test's measure of the cost).
  uint64_t steps() const { return steps_; }

  TcpStoreFrame() = default;

 private:
  explicit TcpStoreFrame(uint64_t steps) : steps_(steps) {}
  bool have(size_t n, size_t available);
  State refuse(std::string why);

  uint8_t query_ = 0;
  size_t pos_ = 0;       // bytes of the request scanned
  size_t need_ = 1;
  int field_ = -1;       // -1: the query byte; then an index into its shape
  uint64_t items_ = 0;   // a list field: entries left
  bool in_item_ = false; // a list field: its count was read
  std::string why_;
  uint64_t steps_ = 0;
};

}  // namespace mlos::collectives
