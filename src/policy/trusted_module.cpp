// SPDX-License-Identifier: Apache-2.0
#include "policy/trusted_module.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "os/trusted_path.h"

namespace mlos::policy {

Result<os::UniqueFd> open_trusted_module(const std::string& path, std::optional<uid_t> also_trusted) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  // The directories first: once they pass, only root (or the trusted
  // user) can change what the path names, so the open below is the file.
  if (std::string why = os::untrusted_reason(dir, also_trusted); !why.empty()) {
    return make_error(MLOS_ERR_PERMISSION, "policy " + path + " is not loaded: " + why);
  }
  os::UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    const int e = errno;
    return make_sys_error(e, "policy " + path, e == ENOENT ? MLOS_ERR_NOT_FOUND : MLOS_ERR_PERMISSION);
  }
  struct stat st{};
  if (fstat(fd.get(), &st) != 0) return make_sys_error(errno, "policy " + path);
  if (!S_ISREG(st.st_mode)) return make_error(MLOS_ERR_PERMISSION, "policy " + path + " is not a regular file");
  if (std::string why = os::untrusted_owner_reason(st, also_trusted); !why.empty()) {
    return make_error(MLOS_ERR_PERMISSION, "policy " + path + " is not loaded: it is " + why);
  }
  return fd;
}

}  // namespace mlos::policy
