// SPDX-License-Identifier: Apache-2.0
#include "os/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "os/unique_fd.h"

namespace mlos::os {

namespace {

Error discard(const std::string& tmp, int err, const std::string& what) {
  unlink(tmp.c_str());
  return make_sys_error(err, what);
}

}  // namespace

Result<std::optional<std::string>> read_whole_file(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return make_sys_error(errno, "cannot read " + path);
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_sys_error(errno, "cannot read " + path);
    if (n == 0) return std::optional<std::string>(std::move(out));
    out.append(buf, static_cast<size_t>(n));
  }
}

Status replace_file_durably(const std::string& dir, const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int raw = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (raw < 0 && errno == EEXIST && unlink(tmp.c_str()) == 0) {
    raw = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  UniqueFd fd(raw);
  if (fd.get() < 0) return make_sys_error(errno, "cannot create " + tmp);
  for (size_t done = 0; done < data.size();) {
    ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return discard(tmp, errno, "cannot write " + tmp);
    done += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0) return discard(tmp, errno, "fsync of " + tmp);
  if (rename(tmp.c_str(), path.c_str()) != 0) return discard(tmp, errno, "cannot rename " + tmp + " to " + path);
  UniqueFd dfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0 && fsync(dfd.get()) != 0) return make_sys_error(errno, "fsync of directory " + dir);
  return Status::Ok();
}

}  // namespace mlos::os
