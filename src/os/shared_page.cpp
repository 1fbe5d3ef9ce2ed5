// SPDX-License-Identifier: Apache-2.0
#include "os/shared_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace mlos::os {

Result<SharedPage> SharedPage::create(const std::string& name) {
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return make_sys_error(errno, "memfd_create(" + name + ")");
  if (ftruncate(fd, kSize) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    int err = errno;
    close(fd);
    return make_sys_error(err, "sizing and sealing memfd " + name);
  }
  void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    return make_sys_error(err, "mmap of memfd " + name);
  }
  return SharedPage(fd, p);
}

Result<SharedPage> SharedPage::map_readonly(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return make_sys_error(errno, "fstat of shared page");
  if (st.st_size < static_cast<off_t>(kSize)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "shared page descriptor is " + std::to_string(st.st_size) +
                                                     " bytes, smaller than a page");
  }
  // A page its owner could still shrink would let it kill the reader with
  // SIGBUS: only sealed memfds are mapped.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (!S_ISREG(st.st_mode) || seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "shared page descriptor is not a memfd sealed against shrinking");
  }
  int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return make_sys_error(errno, "dup of shared page descriptor");
  void* p = mmap(nullptr, kSize, PROT_READ, MAP_SHARED, mine, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(mine);
    return make_sys_error(err, "mmap of shared page");
  }
  return SharedPage(mine, p);
}

SharedPage::SharedPage(SharedPage&& o) noexcept : fd_(std::exchange(o.fd_, -1)), data_(std::exchange(o.data_, nullptr)) {}

SharedPage& SharedPage::operator=(SharedPage&& o) noexcept {
  if (this != &o) {
    this->~SharedPage();
    fd_ = std::exchange(o.fd_, -1);
    data_ = std::exchange(o.data_, nullptr);
  }
  return *this;
}

SharedPage::~SharedPage() {
  if (data_ != nullptr) munmap(data_, kSize);
  if (fd_ >= 0) close(fd_);
}

}  // namespace mlos::os
