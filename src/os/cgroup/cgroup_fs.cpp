// SPDX-License-Identifier: Apache-2.0
#include "os/cgroup/cgroup_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace mlos::os {

bool LinuxCgroupFs::exists(const std::string& path) const {
  struct stat st {};
  return stat(full(path).c_str(), &st) == 0;
}

Status LinuxCgroupFs::make_dir(const std::string& path) {
  if (mkdir(full(path).c_str(), 0755) != 0 && errno != EEXIST) {
    return make_sys_error(errno, "cannot create cgroup " + full(path), errno == EACCES ? MLOS_ERR_PERMISSION
                                                                                       : MLOS_ERR_SYSTEM);
  }
  return Status::Ok();
}

Status LinuxCgroupFs::remove_dir(const std::string& path) {
  if (rmdir(full(path).c_str()) != 0 && errno != ENOENT) {
    return make_sys_error(errno, "cannot remove cgroup " + full(path));
  }
  return Status::Ok();
}

Result<std::string> LinuxCgroupFs::read(const std::string& path) const {
  int fd = open(full(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_sys_error(errno, "cannot read " + full(path));
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      if (n < 0) return make_sys_error(err, "cannot read " + full(path));
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

Status LinuxCgroupFs::write(const std::string& path, const std::string& value) {
  int fd = open(full(path).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return make_sys_error(errno, "cannot open " + full(path));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return make_sys_error(n < 0 ? err : EIO, "cannot write \"" + value + "\" to " + full(path),
                          err == EACCES || err == EPERM ? MLOS_ERR_PERMISSION : MLOS_ERR_SYSTEM);
  }
  return Status::Ok();
}

Result<std::vector<std::string>> LinuxCgroupFs::list_dirs(const std::string& path) const {
  DIR* d = opendir(full(path).c_str());
  if (d == nullptr) return make_sys_error(errno, "cannot list " + full(path));
  std::vector<std::string> out;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (e->d_type == DT_DIR && name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  return out;
}

}  // namespace mlos::os
