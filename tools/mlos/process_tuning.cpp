// SPDX-License-Identifier: Apache-2.0
#include "process_tuning.h"

#include <fstream>
#include <iterator>

namespace mlos::cli {

std::string tuning_of_process(pid_t pid) {
  if (pid <= 0) return "";
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string key = "MLOS_TUNE_CHOICE=";
  for (std::string entry; std::getline(in, entry, '\0');) {
    if (entry.compare(0, key.size(), key) == 0) return entry.substr(key.size());
  }
  return "";
}

}  // namespace mlos::cli
