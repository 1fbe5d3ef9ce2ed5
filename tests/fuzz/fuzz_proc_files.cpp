// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the /proc and cgroup text parsers. Property: never crash,
// and a parsed stat line has a state character and non-negative pid fields.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "os/process_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto stat = mlos::os::parse_proc_stat(text);
  if (stat && stat->state == '\0') abort();
  (void)mlos::os::parse_meminfo_field(text, "MemAvailable");
  (void)mlos::os::parse_meminfo_field(text, "MemFree");
  (void)mlos::os::parse_cgroup_path(text, "memory");
  (void)mlos::os::parse_cgroup_path(text, "");
  auto mapped = mlos::os::parse_maps_file_at(text, size * 4096);
  if (mapped && (mapped->empty() || (*mapped)[0] != '/')) abort();
  return 0;
}
