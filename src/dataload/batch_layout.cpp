// SPDX-License-Identifier: Apache-2.0
#include "dataload/batch_layout.h"

#include <string>

#include "mlos/dataload.h"

namespace mlos::dataload {

namespace {
uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
}  // namespace

Result<BatchLayout> batch_layout(uint32_t batch_size, uint32_t image_size, uint32_t layout) {
  if (batch_size == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "batch_size must be > 0");
  if (image_size < 8 || image_size > 4096) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "image_size must be in 8..4096, got " + std::to_string(image_size));
  }
  uint64_t element = 0;
  switch (layout) {
    case MLOS_DATALOAD_F32_CHW: element = 4; break;
    case MLOS_DATALOAD_U8_CHW:
    case MLOS_DATALOAD_U8_HWC: element = 1; break;
    default: return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown layout " + std::to_string(layout));
  }
  BatchLayout b;
  b.batch_size = batch_size;
  b.image_size = image_size;
  b.layout = layout;
  b.sample_bytes = uint64_t{image_size} * image_size * 3 * element;
  b.labels_offset = round_up(b.sample_bytes * batch_size, 64);
  b.slot_bytes = round_up(b.labels_offset + uint64_t{8} * batch_size, 4096);
  if (b.slot_bytes > (uint64_t{16} << 30)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "a batch of " + std::to_string(batch_size) + " samples of " +
                                                     std::to_string(image_size) + "^2 would take over 16 GiB");
  }
  return b;
}

}  // namespace mlos::dataload
