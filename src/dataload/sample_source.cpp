// SPDX-License-Identifier: Apache-2.0
#include "dataload/sample_source.h"

#include "dataload/file_reads.h"

namespace mlos::dataload {

Result<std::span<const uint8_t>> SampleSource::read(size_t i, ScratchBuffer& buffer) const {
  auto extent = open_sample(i);
  if (!extent) return extent.error();
  uint8_t* data = buffer.ensure(extent->length);
  if (Status s = pread_exact(extent->fd, extent->offset, {data, extent->length}, describe(i)); !s) return s.error();
  return std::span<const uint8_t>(data, extent->length);
}

}  // namespace mlos::dataload
