// SPDX-License-Identifier: Apache-2.0
#include "os/close_descriptors.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

namespace mlos::os {
namespace {

std::vector<int> sorted_keep(const std::vector<int>& keep) {
  std::vector<int> k;
  for (int fd : keep) {
    if (fd >= 0) k.push_back(fd);
  }
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  return k;
}

}  // namespace

Status close_descriptors_except(const std::vector<int>& keep) {
  unsigned first = 0;
  bool first_call = true;
  std::vector<int> k = sorted_keep(keep);
  k.push_back(-1);  // sentinel: the last gap runs to the highest number
  for (int fd : k) {
    unsigned last = fd < 0 ? UINT_MAX : static_cast<unsigned>(fd) - 1;
    if (fd < 0 || static_cast<unsigned>(fd) > first) {
      if (close_range(first, last, 0) != 0) {
        // Only the first call can meet a kernel without close_range, and
        // nothing has been closed yet when it does.
        if (errno == ENOSYS && first_call) return close_descriptors_except_by_listing(keep);
        return make_sys_error(errno, "close_range(" + std::to_string(first) + ", " + std::to_string(last) + ")");
      }
      first_call = false;
    }
    if (fd >= 0) first = static_cast<unsigned>(fd) + 1;
  }
  return Status::Ok();
}

Status close_descriptors_except_by_listing(const std::vector<int>& keep) {
  std::vector<int> k = sorted_keep(keep);
  // Collect first, close after: closing while reading the directory would
  // change what readdir walks.
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return make_sys_error(errno, "listing /proc/self/fd to close descriptors");
  std::vector<int> open_fds;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    int fd = std::atoi(entry->d_name);
    if (fd != dirfd(dir)) open_fds.push_back(fd);
  }
  closedir(dir);
  for (int fd : open_fds) {
    if (!std::binary_search(k.begin(), k.end(), fd)) close(fd);  // EBADF/EINTR: it is gone either way
  }
  return Status::Ok();
}

}  // namespace mlos::os
