// SPDX-License-Identifier: Apache-2.0
#include "os/process_memory.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace mlos::os {

Result<uint64_t> process_resident_bytes(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/statm";
  std::ifstream statm(path);
  unsigned long long size = 0, resident = 0;
  if (!(statm >> size >> resident)) return make_error(MLOS_ERR_NOT_FOUND, "cannot read " + path);
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace mlos::os
