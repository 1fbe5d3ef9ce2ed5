// SPDX-License-Identifier: Apache-2.0
#include "os/own_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "os/make_directories.h"

namespace mlos::os {

Status check_own_directory(const std::string& path, const std::string& what) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return make_sys_error(errno, "cannot stat " + what + " " + path);
  if (S_ISLNK(st.st_mode)) {
    return make_error(MLOS_ERR_PERMISSION, what + " " + path +
                                               " is a symbolic link; refusing to use it (name the directory itself)");
  }
  if (!S_ISDIR(st.st_mode)) return make_error(MLOS_ERR_SYSTEM, what + " " + path + " is not a directory");
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return make_error(MLOS_ERR_PERMISSION, what + " " + path + " belongs to uid " + std::to_string(st.st_uid) +
                                               ", neither this user nor root; refusing to use it");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return make_error(MLOS_ERR_PERMISSION,
                      what + " " + path + " is writable by group or others; refusing to use it (chmod go-w)");
  }
  return Status::Ok();
}

Status make_own_directory(const std::string& path, mode_t mode, const std::string& what) {
  if (Status s = make_directories(path, mode, what); !s) return s;
  return check_own_directory(path, what);
}

}  // namespace mlos::os
