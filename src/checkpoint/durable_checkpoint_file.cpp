// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/durable_checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>

#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_format.h"
#include "checkpoint/checkpoint_names.h"
#include "os/unique_fd.h"

namespace mlos::checkpoint {

namespace {

// Payload bytes per write(2): small enough that the hash of a piece and its
// write read it from cache, large enough that system calls cost nothing.
constexpr size_t kWriteChunk = 1 << 20;

Error io_error(int err, const std::string& what) { return make_sys_error(err, what, MLOS_ERR_IO); }

// Writes all of [data, data+size), or returns the errno of the failing call.
int write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // write(2) never returns 0 for a regular file with size > 0
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

static Status commit_file_durably(const std::string& dir, int dir_fd, const std::string& tmp, const std::string& final_path,
                                  const std::function<Status(int fd)>& fill) {
  os::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return io_error(errno, "cannot create " + tmp);
  auto discard = [&](int err, const std::string& what) {
    fd.reset();
    ::unlink(tmp.c_str());
    return io_error(err, what);
  };
  if (Status filled = fill(fd.get()); !filled) {
    fd.reset();
    ::unlink(tmp.c_str());
    return filled;
  }
  // fdatasync covers the data and the size: all a new file needs. Once only.
  if (::fdatasync(fd.get()) != 0) return discard(errno, "fdatasync of " + tmp + " failed; not retried");
  // close(2) can report a deferred write error (NFS); its fd is gone either way.
  if (::close(fd.release()) != 0) return discard(errno, "close of " + tmp);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return discard(errno, "cannot rename " + tmp + " to " + final_path);
  }
  if (::fsync(dir_fd) != 0) {
    const int err = errno;
    // The rename may or may not reach the disk; take it back so that what
    // readers see now matches the failure reported.
    ::unlink(final_path.c_str());
    return io_error(err, "fsync of directory " + dir + " after renaming " + final_path + " failed; not retried");
  }
  return Status::Ok();
}

Status write_checkpoint_file(const std::string& dir, int dir_fd, std::string_view prefix, uint64_t sequence,
                             const void* data, size_t size) {
  const std::string tmp = path_in(dir, temp_name(prefix, sequence));
  return commit_file_durably(dir, dir_fd, tmp, path_in(dir, final_name(prefix, sequence)), [&](int fd) -> Status {
    PayloadHasher hasher;
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t off = 0; off < size; off += kWriteChunk) {
      const size_t n = std::min(kWriteChunk, size - off);
      hasher.update(bytes + off, n);
      if (int err = write_all(fd, bytes + off, n)) return io_error(err, "cannot write " + tmp);
    }
    Footer footer;
    footer.payload_length = size;
    footer.sequence = sequence;
    footer.payload_hash = hasher.digest();
    const FooterBytes footer_bytes = encode_footer(footer);
    if (int err = write_all(fd, footer_bytes.data(), footer_bytes.size())) {
      return io_error(err, "cannot write the footer of " + tmp);
    }
    return Status::Ok();
  });
}

Status write_file_durably(const std::string& path, const void* data, size_t size) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (slash != std::string::npos && slash + 1 == path.size()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " names a directory, not a file");
  }
  os::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) {
    const int err = errno;
    return make_sys_error(err, "cannot open the directory " + dir,
                          err == ENOENT || err == ENOTDIR ? MLOS_ERR_NOT_FOUND : MLOS_ERR_IO);
  }
  static std::atomic<uint64_t> attempt{0};
  const std::string tmp =
      path + ".mlos-tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt.fetch_add(1));
  return commit_file_durably(dir, dir_fd.get(), tmp, path, [&](int fd) -> Status {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t off = 0; off < size; off += kWriteChunk) {
      if (int err = write_all(fd, bytes + off, std::min(kWriteChunk, size - off))) {
        return io_error(err, "cannot write " + tmp);
      }
    }
    return Status::Ok();
  });
}

}  // namespace mlos::checkpoint
