// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/checkpoint_retention.h"

#include <unistd.h>

#include <cerrno>

#include "checkpoint/checkpoint_directory.h"

namespace mlos::checkpoint {

Result<uint32_t> remove_old_checkpoints(const std::string& dir, std::string_view prefix, uint32_t keep_last) {
  auto entries = list_checkpoints(dir, prefix);
  if (!entries) return entries.error();
  uint32_t removed = 0;
  for (size_t i = 0; i + keep_last < entries->size(); ++i) {
    const std::string path = path_in(dir, (*entries)[i].name);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return make_sys_error(errno, "retention cannot delete " + path, MLOS_ERR_IO);
    }
    ++removed;
  }
  return removed;
}

}  // namespace mlos::checkpoint
