// SPDX-License-Identifier: Apache-2.0
#include "policy/file_advice.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>

#include "mlos/policy.h"
#include "os/unique_fd.h"

namespace mlos::policy {

Status advise_file(const std::string& path, uid_t uid, uint64_t advice, uint64_t offset, uint64_t length) {
  if (offset > INT64_MAX || length > INT64_MAX) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "offset or length past the largest file offset");
  }
  os::UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return make_sys_error(errno, "cannot open " + path, MLOS_ERR_NOT_FOUND);
  struct stat st{};
  if (fstat(fd.get(), &st) != 0) return make_sys_error(errno, "cannot stat " + path);
  if (!S_ISREG(st.st_mode)) return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " is not a regular file");
  if (st.st_uid != uid && !(st.st_mode & S_IROTH)) {
    return make_error(MLOS_ERR_PERMISSION, path + " is neither the job owner's nor readable by everyone");
  }
  int how = POSIX_FADV_NORMAL;
  switch (advice) {
    case MLOS_POLICY_FILE_SEQUENTIAL: how = POSIX_FADV_SEQUENTIAL; break;
    case MLOS_POLICY_FILE_WILLNEED: how = POSIX_FADV_WILLNEED; break;
    case MLOS_POLICY_FILE_DONTNEED: how = POSIX_FADV_DONTNEED; break;
    default: return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown file advice " + std::to_string(advice));
  }
  if (int rc = posix_fadvise(fd.get(), static_cast<off_t>(offset), static_cast<off_t>(length), how); rc != 0) return make_sys_error(rc, "posix_fadvise " + path);
  return Status::Ok();
}

}  // namespace mlos::policy
