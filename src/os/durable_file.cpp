// SPDX-License-Identifier: Apache-2.0
#include "os/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "os/durable_commit.h"
#include "os/unique_fd.h"

namespace mlos::os {

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
  // The directory is opened first: without it the rename could not be made
  // durable, and a state file that is not durable is an error, not a skip.
  UniqueFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return make_sys_error(errno, "cannot open the directory " + dir, MLOS_ERR_IO);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  // One left by a process that had this pid and died mid-write.
  if (unlink(tmp.c_str()) != 0 && errno != ENOENT) return make_sys_error(errno, "cannot remove " + tmp, MLOS_ERR_IO);
  // Replaced in place: after the rename the old content is gone, so a
  // failed directory sync keeps the new file (and reports the failure).
  return commit_file_durably(
      dir, dir_fd.get(), tmp, path,
      [&](int fd) { return write_all(fd, data.data(), data.size(), "cannot write " + tmp); },
      OnDirectorySyncFailure::kKeepNewFile);
}

}  // namespace mlos::os
