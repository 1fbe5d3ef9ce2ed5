// SPDX-License-Identifier: Apache-2.0
#include "os/trusted_path.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mlos::os {

std::string untrusted_owner_reason(const struct stat& st, std::optional<uid_t> also) {
  if (st.st_uid != 0 && (!also || st.st_uid != *also)) {
    return "owned by uid " + std::to_string(st.st_uid) +
           (also && *also != 0 ? ", neither root nor uid " + std::to_string(*also) : ", not root");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by its group or by others";
  return "";
}

std::string untrusted_reason(const std::string& path, std::optional<uid_t> also_trusted) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path + " cannot be resolved: " + std::strerror(errno);
  std::string component = real;
  free(real);
  for (bool leaf = true;; leaf = false) {
    struct stat st{};
    if (stat(component.c_str(), &st) != 0) return component + ": " + std::strerror(errno);
    const bool sticky_root_dir = !leaf && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0;
    if (!sticky_root_dir) {
      if (std::string why = untrusted_owner_reason(st, also_trusted); !why.empty()) {
        return component + " is " + why;
      }
    }
    if (component == "/") return "";
    const size_t slash = component.rfind('/');
    component = slash == 0 ? "/" : component.substr(0, slash);
  }
}

}  // namespace mlos::os
