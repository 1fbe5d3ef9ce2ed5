/* SPDX-License-Identifier: Apache-2.0 */
// One training or validation sample, from encoded bytes to a packed tensor
// in the caller's batch slot: the ImageNet recipes of torchvision.
//
//   train: RandomResizedCrop(224) -> RandomHorizontalFlip(0.5) -> ToTensor
//          -> Normalize
//   val:   Resize(256) -> CenterCrop(224) -> ToTensor -> Normalize
//
// The crop is chosen on the full image size from the header alone; a JPEG
// is then decoded only around the crop, at the smallest DCT scale that
// keeps the crop at least as large as the output (jpeg_decode.h), and the
// crop is resized from there in one pass (resize.h). PNGs are decoded whole.
// Before any of that, the sample's work is estimated from its header
// (sample_work.h); one over SampleOptions::max_work is refused with
// MLOS_ERR_INVALID_ARGUMENT, "sample needs an estimated ... over the budget
// ... (SampleOptions::max_work)": a bad sample like a corrupt file.
// Random draws happen in torchvision's order: the crop's, then the flip's
// uniform(0, 1) < p.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "dataload/crop_sampler.h"
#include "dataload/decode_options.h"
#include "dataload/image_decode.h"
#include "dataload/image_transforms.h"
#include "dataload/random_source.h"
#include "dataload/resize.h"
#include "dataload/sample_work.h"
#include "dataload/scratch_buffer.h"

namespace mlos::dataload {

struct SampleOptions {
  Size output{224, 224};  // val: must be square (the centre crop)
  SampleLayout layout = SampleLayout::kF32Chw;
  Normalization normalization;
  DecodeOptions decode;
  ResizeOptions resize;
  RandomResizedCropOptions crop;  // train
  double flip_probability = 0.5;  // train
  int val_resize_shorter = 256;   // val: Resize(256) before the centre crop
  bool dct_scaling = true;        // false: JPEG regions decode at full size
  // Work budget per sample, in sample_work.h's units; 0: none. Images over
  // decode.max_pixels are left to the decoder's own refusal.
  int64_t max_work = kDefaultMaxSampleWork;
};

// What was done to the sample, for tests and statistics.
struct SampleInfo {
  ImageFormat format = ImageFormat::kUnknown;
  Size image;          // the encoded image's size
  RectD crop;          // in the encoded image's coordinates
  bool flipped = false;
  int dct_scale_num = 8;  // 8 = full size (and always for PNG)
};

// The slot must hold packed_sample_bytes(options.output, options.layout).
struct SampleSlot {
  void* data = nullptr;
  size_t bytes = 0;
};

Result<SampleInfo> decode_train_sample(std::span<const uint8_t> bytes, RandomSource& random,
                                       const SampleOptions& options, DecodeScratch& scratch, SampleSlot dst);

Result<SampleInfo> decode_val_sample(std::span<const uint8_t> bytes, const SampleOptions& options,
                                     DecodeScratch& scratch, SampleSlot dst);

}  // namespace mlos::dataload
