/* SPDX-License-Identifier: Apache-2.0 */
// Where a batch lives in its slot, known to both sides of the loader (the
// trainer's library and the mlos-dataload helper): packed samples first,
// then one int64 label per sample, each part 64-byte aligned; a slot is a
// whole number of pages (a tensor-pool buffer).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace mlos::dataload {

struct BatchLayout {
  uint32_t batch_size = 0;
  uint32_t image_size = 0;  // height = width
  uint32_t layout = 0;      // mlos_dataload_layout_t
  uint64_t sample_bytes = 0;
  uint64_t labels_offset = 0;  // from the slot's start
  uint64_t slot_bytes = 0;
};

// INVALID_ARGUMENT for a batch size of 0, an image size outside 8..4096,
// an unknown layout, or a slot over 16 GiB.
Result<BatchLayout> batch_layout(uint32_t batch_size, uint32_t image_size, uint32_t layout);

}  // namespace mlos::dataload
