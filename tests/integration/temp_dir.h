/* SPDX-License-Identifier: Apache-2.0 */
// A fresh directory under the system temp directory, removed with
// everything in it when the object goes away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace mlos_test {

class TempDir {
 public:
  // path() is empty if the directory could not be created.
  explicit TempDir(const std::string& stem) {
    std::string tmpl = (std::filesystem::temp_directory_path() / (stem + "-XXXXXX")).string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = std::filesystem::canonical(tmpl).string();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Canonical: what /proc/self/fd links show.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace mlos_test
