/* SPDX-License-Identifier: Apache-2.0 */
// The last step of a sample: optional horizontal flip and packing into the
// caller's batch slot in the layout the model wants.
//
// Packing reads the RGB8 image once and writes the slot once; the flip is
// folded into that pass (reading rows right to left) rather than done in
// place first. Nothing is allocated: the slot is the caller's (later a
// shared-memory batch), the float lookup table lives on the stack.
#pragma once

#include <array>
#include <cstddef>

#include "core/status.h"
#include "dataload/image_view.h"

namespace mlos::dataload {

enum class SampleLayout {
  kU8Hwc,  // uint8, height x width x 3 (the decoded order)
  kU8Chw,  // uint8, 3 x height x width
  kF32Chw, // float32, 3 x height x width, (x / 255 - mean) / std
};

// ImageNet statistics, as in every torchvision reference script.
struct Normalization {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

// Bytes a packed sample of `size` takes in `layout`.
size_t packed_sample_bytes(Size size, SampleLayout layout);

// Mirrors the image left to right in place.
void flip_horizontal(MutableImageView image);

// Writes src (flipped if asked) into dst. kF32Chw computes, per value,
// exactly torchvision's ToTensor then Normalize in float32:
// (float(x) / 255.f - mean[c]) / std[c]. Errors if dst_bytes is smaller
// than packed_sample_bytes (MLOS_ERR_BUFFER_TOO_SMALL) or std has a zero.
Status pack_sample(ImageView src, bool flip, SampleLayout layout, const Normalization& normalization, void* dst,
                   size_t dst_bytes);

}  // namespace mlos::dataload
