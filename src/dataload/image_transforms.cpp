// SPDX-License-Identifier: Apache-2.0
#include "dataload/image_transforms.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mlos::dataload {

size_t packed_sample_bytes(Size size, SampleLayout layout) {
  const size_t values = static_cast<size_t>(size.width) * size.height * kRgbChannels;
  return layout == SampleLayout::kF32Chw ? values * sizeof(float) : values;
}

void flip_horizontal(MutableImageView image) {
  for (int y = 0; y < image.height; ++y) {
    uint8_t* left = image.row(y);
    uint8_t* right = left + static_cast<size_t>(image.width - 1) * kRgbChannels;
    for (; left < right; left += kRgbChannels, right -= kRgbChannels) {
      std::swap_ranges(left, left + kRgbChannels, right);
    }
  }
}

namespace {

// Pixel x of a row, counted from the right when flipping.
inline const uint8_t* pixel(const uint8_t* row, int x, int width, bool flip) {
  return row + static_cast<size_t>(flip ? width - 1 - x : x) * kRgbChannels;
}

void pack_hwc(ImageView src, bool flip, uint8_t* out) {
  const size_t row_bytes = static_cast<size_t>(src.width) * kRgbChannels;
  for (int y = 0; y < src.height; ++y, out += row_bytes) {
    if (!flip) {
      std::memcpy(out, src.row(y), row_bytes);
      continue;
    }
    for (int x = 0; x < src.width; ++x) std::memcpy(out + x * kRgbChannels, pixel(src.row(y), x, src.width, true), 3);
  }
}

template <class T, class Convert>
void pack_chw(ImageView src, bool flip, T* out, Convert convert) {
  const size_t plane = static_cast<size_t>(src.width) * src.height;
  T* r = out;
  T* g = out + plane;
  T* b = out + 2 * plane;
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* row = src.row(y);
    for (int x = 0; x < src.width; ++x) {
      const uint8_t* p = pixel(row, x, src.width, flip);
      *r++ = convert(0, p[0]);
      *g++ = convert(1, p[1]);
      *b++ = convert(2, p[2]);
    }
  }
}

}  // namespace

Status pack_sample(ImageView src, bool flip, SampleLayout layout, const Normalization& normalization, void* dst,
                   size_t dst_bytes) {
  if (dst == nullptr || dst_bytes < packed_sample_bytes(Size{src.width, src.height}, layout)) {
    return make_error(MLOS_ERR_BUFFER_TOO_SMALL, "pack_sample: destination smaller than the packed sample");
  }
  switch (layout) {
    case SampleLayout::kU8Hwc:
      pack_hwc(src, flip, static_cast<uint8_t*>(dst));
      break;
    case SampleLayout::kU8Chw:
      pack_chw(src, flip, static_cast<uint8_t*>(dst), [](int, uint8_t v) { return v; });
      break;
    case SampleLayout::kF32Chw: {
      if (reinterpret_cast<uintptr_t>(dst) % alignof(float) != 0) {
        return make_error(MLOS_ERR_INVALID_ARGUMENT, "pack_sample: float destination not 4-byte aligned");
      }
      // 256 values per channel: a table is exact and cheaper than the math.
      float table[3][256];
      for (int c = 0; c < 3; ++c) {
        if (normalization.std[c] == 0.0f) {
          return make_error(MLOS_ERR_INVALID_ARGUMENT, "pack_sample: normalization std is zero");
        }
        for (int v = 0; v < 256; ++v) {
          table[c][v] = (static_cast<float>(v) / 255.0f - normalization.mean[c]) / normalization.std[c];
        }
      }
      pack_chw(src, flip, static_cast<float*>(dst), [&table](int c, uint8_t v) { return table[c][v]; });
      break;
    }
  }
  return Status::Ok();
}

}  // namespace mlos::dataload
