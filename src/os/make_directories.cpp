// SPDX-License-Identifier: Apache-2.0
#include "os/make_directories.h"

#include <sys/stat.h>

#include <cerrno>

namespace mlos::os {

Status make_directories(const std::string& path, mode_t mode, const std::string& what) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    const std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), mode) != 0 && errno != EEXIST) {
      return make_sys_error(errno, "cannot create " + what + " " + part);
    }
  }
  return Status::Ok();
}

}  // namespace mlos::os
