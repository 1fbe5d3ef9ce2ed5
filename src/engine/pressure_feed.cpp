// SPDX-License-Identifier: Apache-2.0
#include "engine/pressure_feed.h"

#include <cstddef>

namespace mlos {

void fill_pressure_info(const PressureReport& r, mlos_memory_pressure_info_t* info) {
  const size_t size = info->struct_size;
  auto fits = [&](size_t end) { return size >= end; };
#define MLOS_FITS(field) fits(offsetof(mlos_memory_pressure_info_t, field) + sizeof info->field)
  if (MLOS_FITS(level)) info->level = r.level;
  if (MLOS_FITS(available_bytes)) info->available_bytes = r.figures.budget_bytes ? r.figures.available_bytes : 0;
  if (MLOS_FITS(budget_bytes)) info->budget_bytes = r.figures.budget_bytes;
  if (MLOS_FITS(psi_some_avg10)) info->psi_some_avg10 = r.figures.psi_some_avg10;
  if (MLOS_FITS(psi_full_avg10)) info->psi_full_avg10 = r.figures.psi_full_avg10;
  if (MLOS_FITS(source)) info->source = static_cast<uint32_t>(r.figures.source);
  if (MLOS_FITS(detected_ns)) info->detected_ns = r.detected_ns;
  if (MLOS_FITS(sequence)) info->sequence = r.sequence;
#undef MLOS_FITS
}

}  // namespace mlos
