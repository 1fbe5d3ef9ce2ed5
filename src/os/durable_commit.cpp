// SPDX-License-Identifier: Apache-2.0
#include "os/durable_commit.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "os/unique_fd.h"

namespace mlos::os {

namespace {

Error io_error(int err, const std::string& what) { return make_sys_error(err, what, MLOS_ERR_IO); }

}  // namespace

Status write_all(int fd, const void* data, size_t size, const std::string& what) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(errno, what);
    }
    if (n == 0) return io_error(EIO, what);  // never for a regular file with size > 0
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status commit_file_durably(const std::string& dir, int dir_fd, const std::string& tmp, const std::string& final_path,
                           const std::function<Status(int fd)>& fill, OnDirectorySyncFailure on_directory_sync_failure) {
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return io_error(errno, "cannot create " + tmp);
  auto discard = [&](const Error& e) {
    fd.reset();
    ::unlink(tmp.c_str());
    return e;
  };
  if (Status filled = fill(fd.get()); !filled) return discard(filled.error());
  // fdatasync covers the data and the size: all a new file needs. Once only.
  if (::fdatasync(fd.get()) != 0) return discard(io_error(errno, "fdatasync of " + tmp + " failed; not retried"));
  // close(2) can report a deferred write error (NFS); its fd is gone either way.
  if (::close(fd.release()) != 0) return discard(io_error(errno, "close of " + tmp));
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return discard(io_error(errno, "cannot rename " + tmp + " to " + final_path));
  }
  if (::fsync(dir_fd) != 0) {
    const int err = errno;
    if (on_directory_sync_failure == OnDirectorySyncFailure::kUnlinkNewFile) ::unlink(final_path.c_str());
    return io_error(err, "fsync of directory " + dir + " after renaming " + final_path + " failed; not retried");
  }
  return Status::Ok();
}

}  // namespace mlos::os
