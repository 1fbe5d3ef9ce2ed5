/* SPDX-License-Identifier: Apache-2.0 */
// One page of memory that another process can map: a sealed memfd
// (memfd_create + ftruncate + F_SEAL_GROW/SHRINK), mapped here read-write.
// Its descriptor travels to the reader (inherited across fork, or sent with
// SCM_RIGHTS), which maps it read-only with map_readonly().
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace mlos::os {

class SharedPage {
 public:
  static constexpr size_t kSize = 4096;

  // A new zero-filled page; `name` shows in /proc/<pid>/fd ("memfd:<name>").
  static Result<SharedPage> create(const std::string& name);
  // Maps the page behind `fd` (duplicated; the caller keeps its own) read-only.
  // INVALID_ARGUMENT if it is smaller than a page or not a memfd sealed
  // against shrinking (its owner could otherwise SIGBUS the reader).
  static Result<SharedPage> map_readonly(int fd);

  SharedPage(SharedPage&& other) noexcept;
  SharedPage& operator=(SharedPage&& other) noexcept;
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;
  ~SharedPage();

  void* data() const { return data_; }
  int fd() const { return fd_; }

 private:
  SharedPage(int fd, void* data) : fd_(fd), data_(data) {}
  int fd_ = -1;
  void* data_ = nullptr;
};

}  // namespace mlos::os
