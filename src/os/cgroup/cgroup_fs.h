/* SPDX-License-Identifier: Apache-2.0 */
// The file operations a cgroup driver needs, behind an interface: the real
// cgroupfs (paths under a root given as a parameter), or a fake in tests that
// models the kernel's rules. Paths are relative to the filesystem's root.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace mlos::os {

class CgroupFs {
 public:
  virtual ~CgroupFs() = default;
  virtual bool exists(const std::string& path) const = 0;
  // EEXIST is success.
  virtual Status make_dir(const std::string& path) = 0;
  // ENOENT is success; EBUSY (processes or children left) is an error.
  virtual Status remove_dir(const std::string& path) = 0;
  virtual Result<std::string> read(const std::string& path) const = 0;
  // Writes `value` in one write(2), as cgroupfs requires.
  virtual Status write(const std::string& path, const std::string& value) = 0;
  // Names of the directories directly below `path`.
  virtual Result<std::vector<std::string>> list_dirs(const std::string& path) const = 0;
};

// cgroupfs as mounted under `root` (e.g. /sys/fs/cgroup/cpuset).
class LinuxCgroupFs final : public CgroupFs {
 public:
  explicit LinuxCgroupFs(std::string root) : root_(std::move(root)) {}
  bool exists(const std::string& path) const override;
  Status make_dir(const std::string& path) override;
  Status remove_dir(const std::string& path) override;
  Result<std::string> read(const std::string& path) const override;
  Status write(const std::string& path, const std::string& value) override;
  Result<std::vector<std::string>> list_dirs(const std::string& path) const override;
  const std::string& root() const { return root_; }

 private:
  std::string full(const std::string& path) const { return path.empty() ? root_ : root_ + "/" + path; }
  std::string root_;
};

}  // namespace mlos::os
