// SPDX-License-Identifier: Apache-2.0
#include "os/own_threads.h"

#include <dirent.h>

#include <cerrno>
#include <cstdlib>

namespace mlos::os {

Result<std::vector<pid_t>> own_thread_ids() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return make_sys_error(errno, "cannot list /proc/self/task");
  std::vector<pid_t> tids;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long tid = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  return tids;
}

}  // namespace mlos::os
