// SPDX-License-Identifier: Apache-2.0
#include "dataload/sample_decode.h"

#include <algorithm>

#include "dataload/jpeg_decode.h"

namespace mlos::dataload {
namespace {

// Decodes the part of the image `crop` needs and resizes it into
// scratch.resized at options.output; records the DCT scale in info.
// Refuses a sample over options.max_work before decoding any of it.
Result<ImageView> crop_and_resize(std::span<const uint8_t> bytes, const RectD& crop, const SampleOptions& options,
                                  DecodeScratch& scratch, SampleInfo& info) {
  const bool jpeg = info.format == ImageFormat::kJpeg;
  const int scale_num = jpeg && options.dct_scaling ? choose_dct_scale(crop.width, crop.height, options.output) : 8;
  const bool within_pixel_limit =
      static_cast<double>(info.image.width) * info.image.height <= static_cast<double>(options.decode.max_pixels);
  if (options.max_work > 0 && within_pixel_limit) {
    const SampleWork work =
        estimate_sample_work(info.format, info.image, crop, scale_num, options.output, options.resize);
    if (work.total() > static_cast<double>(options.max_work)) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, describe_over_budget(work, options.max_work));
    }
  }
  ImageView source;
  RectD rect = crop;
  if (jpeg) {
    JpegRegionRequest request;
    request.crop = crop;
    request.scale_num = scale_num;
    const double s = request.scale_num / 8.0;
    const double factor = std::max(crop.width * s / options.output.width, crop.height * s / options.output.height);
    request.margin = resize_context_margin(factor);
    auto region = decode_jpeg_region(bytes, request, options.decode, scratch);
    if (!region.ok()) return region.error();
    source = region->view;
    rect = region->crop_in_view;
    info.dct_scale_num = request.scale_num;
  } else {
    auto image = decode_image(bytes, options.decode, scratch);
    if (!image.ok()) return image.error();
    source = image->view;
  }
  const size_t bytes_out = static_cast<size_t>(options.output.width) * options.output.height * kRgbChannels;
  MutableImageView resized{scratch.resized.ensure(bytes_out), options.output.width, options.output.height,
                           static_cast<size_t>(options.output.width) * kRgbChannels};
  if (Status s = resize_rgb(source, rect, resized, options.resize, scratch); !s.ok()) return s.error();
  return ImageView(resized);
}

Status check_slot(const SampleOptions& options, SampleSlot dst) {
  if (options.output.width <= 0 || options.output.height <= 0) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "sample: output size must be positive");
  }
  if (dst.data == nullptr || dst.bytes < packed_sample_bytes(options.output, options.layout)) {
    return make_error(MLOS_ERR_BUFFER_TOO_SMALL, "sample: slot smaller than the packed sample");
  }
  return Status::Ok();
}

}  // namespace

Result<SampleInfo> decode_train_sample(std::span<const uint8_t> bytes, RandomSource& random,
                                       const SampleOptions& options, DecodeScratch& scratch, SampleSlot dst) {
  if (Status s = check_slot(options, dst); !s.ok()) return s.error();
  auto header = read_image_header(bytes, options.decode);
  if (!header.ok()) return header.error();
  SampleInfo info;
  info.format = header->format;
  info.image = header->size;
  const RectI crop = sample_random_resized_crop(info.image.width, info.image.height, options.crop, random);
  info.crop = RectD{static_cast<double>(crop.x), static_cast<double>(crop.y), static_cast<double>(crop.width),
                    static_cast<double>(crop.height)};
  auto resized = crop_and_resize(bytes, info.crop, options, scratch, info);
  if (!resized.ok()) return resized.error();
  info.flipped = random.uniform(0.0, 1.0) < options.flip_probability;
  if (Status s = pack_sample(*resized, info.flipped, options.layout, options.normalization, dst.data, dst.bytes);
      !s.ok()) {
    return s.error();
  }
  return info;
}

Result<SampleInfo> decode_val_sample(std::span<const uint8_t> bytes, const SampleOptions& options,
                                     DecodeScratch& scratch, SampleSlot dst) {
  if (Status s = check_slot(options, dst); !s.ok()) return s.error();
  if (options.output.width != options.output.height || options.output.width > options.val_resize_shorter) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "val sample: output must be square and <= val_resize_shorter");
  }
  auto header = read_image_header(bytes, options.decode);
  if (!header.ok()) return header.error();
  SampleInfo info;
  info.format = header->format;
  info.image = header->size;
  const CenterCropGeometry g =
      center_crop_geometry(info.image.width, info.image.height, options.val_resize_shorter, options.output.width);
  info.crop = g.crop_source;
  auto resized = crop_and_resize(bytes, info.crop, options, scratch, info);
  if (!resized.ok()) return resized.error();
  if (Status s = pack_sample(*resized, false, options.layout, options.normalization, dst.data, dst.bytes); !s.ok()) {
    return s.error();
  }
  return info;
}

}  // namespace mlos::dataload
