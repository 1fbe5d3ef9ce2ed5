/* SPDX-License-Identifier: Apache-2.0 */
// Views of RGB8 pixel buffers and the rectangles the data-loading core
// passes between its stages (crop sampling, region decode, resize).
//
// Every image in src/dataload is RGB8, interleaved (HWC), rows `stride`
// bytes apart. A view never owns its pixels: decoders write into a
// DecodeScratch, transforms into the caller's batch slot.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlos::dataload {

inline constexpr int kRgbChannels = 3;

struct ImageView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  size_t stride = 0;  // bytes between rows, >= width * 3

  const uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
};

struct MutableImageView {
  uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  size_t stride = 0;

  uint8_t* row(int y) const { return data + static_cast<size_t>(y) * stride; }
  operator ImageView() const { return ImageView{data, width, height, stride}; }  // NOLINT
};

// Integer pixel rectangle: columns [x, x + width), rows [y, y + height).
struct RectI {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  friend bool operator==(const RectI&, const RectI&) = default;
};

// A rectangle in continuous pixel coordinates, where pixel (c, r) covers
// [c, c + 1) x [r, r + 1) (PIL's and torchvision's convention, centres at
// +0.5). Crops mapped through a DCT scale or a resize are fractional.
struct RectD {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
};

struct Size {
  int width = 0;
  int height = 0;
  friend bool operator==(const Size&, const Size&) = default;
};

}  // namespace mlos::dataload
