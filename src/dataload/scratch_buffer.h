/* SPDX-License-Identifier: Apache-2.0 */
// A growable byte buffer that keeps its capacity and never zero-fills.
//
// std::vector<uint8_t>::resize value-initialises (memsets) every byte it
// adds, which for a 500x375 RGB image is ~0.5 MB of stores per sample that
// the decoder overwrites anyway. ScratchBuffer only allocates when asked for
// more than it has ever held, so a per-thread DecodeScratch reaches a steady
// state with no allocation at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mlos::dataload {

class ScratchBuffer {
 public:
  // At least `bytes` writable bytes; contents are unspecified (old data is
  // not preserved across growth). Throws std::bad_alloc like operator new.
  uint8_t* ensure(size_t bytes) {
    if (bytes > capacity_) {
      data_.reset(new uint8_t[bytes]);
      capacity_ = bytes;
    }
    return data_.get();
  }
  uint8_t* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// Reusable memory for one decoding thread: decoded pixels, a row for colour
// conversion, the resized image and the resizer's filter temporary. Not
// thread-safe: one per worker thread, reused for every sample it decodes.
struct DecodeScratch {
  ScratchBuffer pixels;   // decoded image or region (RGB8)
  ScratchBuffer row;      // one decoded row before conversion (CMYK)
  ScratchBuffer resized;  // the resized sample before packing
  ScratchBuffer filtered; // resize: the antialias-filtered source region
};

}  // namespace mlos::dataload
