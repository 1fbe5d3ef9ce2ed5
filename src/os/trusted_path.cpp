// SPDX-License-Identifier: Apache-2.0
#include "os/trusted_path.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mlos::os {

std::string untrusted_reason(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path + " cannot be resolved: " + std::strerror(errno);
  std::string component = real;
  free(real);
  while (true) {
    struct stat st{};
    if (stat(component.c_str(), &st) != 0) return component + ": " + std::strerror(errno);
    if (st.st_uid != 0) return component + " is owned by uid " + std::to_string(st.st_uid) + ", not root";
    if (st.st_mode & (S_IWGRP | S_IWOTH)) return component + " is writable by its group or by others";
    if (component == "/") return "";
    const size_t slash = component.rfind('/');
    component = slash == 0 ? "/" : component.substr(0, slash);
  }
}

}  // namespace mlos::os
