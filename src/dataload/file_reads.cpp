// SPDX-License-Identifier: Apache-2.0
#include "dataload/file_reads.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "os/unique_fd.h"

namespace mlos::dataload {

Result<OpenedFile> open_regular_file(const std::string& path, size_t max_bytes) {
  os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return make_sys_error(errno, "cannot open " + path, MLOS_ERR_IO);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_sys_error(errno, "cannot stat " + path, MLOS_ERR_IO);
  if (!S_ISREG(st.st_mode)) return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " is not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " has " + std::to_string(size) +
                                                     " bytes, over the limit of " + std::to_string(max_bytes));
  }
  return OpenedFile{std::move(fd), size};
}

Result<std::span<const uint8_t>> read_whole_file(const std::string& path, size_t max_bytes,
                                                 ScratchBuffer& buffer) {
  auto file = open_regular_file(path, max_bytes);
  if (!file) return file.error();
  uint8_t* data = buffer.ensure(file->size);
  if (Status s = pread_exact(file->fd.get(), 0, {data, file->size}, path); !s) return s.error();
  return std::span<const uint8_t>(data, file->size);
}

Status pread_exact(int fd, uint64_t offset, std::span<uint8_t> out, const std::string& what) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error(errno, "cannot read " + what, MLOS_ERR_IO);
    }
    if (n == 0) {
      return make_error(MLOS_ERR_IO, "short read of " + what + ": " + std::to_string(got) + " of " +
                                         std::to_string(out.size()) + " bytes at offset " +
                                         std::to_string(offset) + " (the file shrank)");
    }
    got += static_cast<size_t>(n);
  }
  return Status::Ok();
}

void advise_will_need(int fd, uint64_t offset, uint64_t length) {
  (void)::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_WILLNEED);
}

void advise_will_need(const std::string& path) {
  os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.valid()) advise_will_need(fd.get(), 0, 0);
}

Result<std::vector<DirectoryEntry>> list_directory(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
  if (!dir) {
    const int err = errno;
    return make_sys_error(err, "cannot list directory " + path, err == ENOENT ? MLOS_ERR_NOT_FOUND : MLOS_ERR_IO);
  }
  std::vector<DirectoryEntry> entries;
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(dir.get());
    if (e == nullptr) {
      if (errno != 0) return make_sys_error(errno, "cannot list directory " + path, MLOS_ERR_IO);
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    DirectoryEntry entry{name};
    // d_type spares a stat for plain files; links and unknown types are
    // followed, as DirEntry.is_dir() does.
    if (e->d_type != DT_REG) {
      struct stat st {};
      if (::fstatat(::dirfd(dir.get()), e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode)) {
        entry.is_dir = true;
        entry.dev = st.st_dev;
        entry.ino = st.st_ino;
      }
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace mlos::dataload
