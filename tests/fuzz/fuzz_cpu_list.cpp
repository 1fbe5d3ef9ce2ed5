// SPDX-License-Identifier: Apache-2.0
// Fuzz target: CpuSet::parse_list. Property: whatever parses prints back to
// a list that parses to the same set.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/cpu_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto set = mlos::CpuSet::parse_list(text);
  if (!set) return 0;
  auto again = mlos::CpuSet::parse_list(set->to_list());
  if (!again || !(*again == *set)) abort();
  return 0;
}
