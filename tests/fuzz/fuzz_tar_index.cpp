// SPDX-License-Identifier: Apache-2.0
// Fuzz target: index_tar (src/dataload/tar_index.h). Properties: it never
// reads outside the archive, and every member it returns lies inside it,
// in order, not overlapping the next one's header.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "dataload/tar_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto members = mlos::dataload::index_tar(
      [&](uint64_t offset, std::span<uint8_t> out) {
        if (offset > size || out.size() > size - offset) abort();
        std::memcpy(out.data(), data + offset, out.size());
        return mlos::Status::Ok();
      },
      size, "fuzz.tar");
  if (!members.ok()) return 0;
  uint64_t end = 0;
  for (const auto& m : *members) {
    if (m.header_offset < end || m.data_offset < m.header_offset + 512 || m.data_offset % 512 != 0) abort();
    if (m.size > size || m.data_offset > size - m.size) abort();
    end = m.data_offset + m.size;
  }
  return 0;
}
