// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/checkpoint_directory.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>

#include "checkpoint/checkpoint_names.h"

namespace mlos::checkpoint {

namespace {

// Calls `visit` with each name in `dir`.
Status for_each_name(const std::string& dir, const std::function<void(std::string_view)>& visit) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) {
    const int err = errno;
    const int code = err == ENOENT || err == ENOTDIR ? MLOS_ERR_NOT_FOUND
                     : err == EACCES                ? MLOS_ERR_PERMISSION
                                                    : MLOS_ERR_SYSTEM;
    return make_sys_error(err, "cannot list checkpoint directory " + dir, code);
  }
  for (;;) {
    errno = 0;
    const dirent* e = readdir(d.get());
    if (e == nullptr) {
      if (errno != 0) return make_sys_error(errno, "cannot list checkpoint directory " + dir);
      return Status::Ok();
    }
    visit(e->d_name);
  }
}

}  // namespace

Result<std::vector<CheckpointEntry>> list_checkpoints(const std::string& dir, std::string_view prefix) {
  std::vector<CheckpointEntry> out;
  Status s = for_each_name(dir, [&](std::string_view name) {
    if (auto seq = parse_final_name(prefix, name)) out.push_back({*seq, std::string(name)});
  });
  if (!s) return s.error();
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
  return out;
}

Result<std::vector<std::string>> list_temp_files(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> out;
  Status s = for_each_name(dir, [&](std::string_view name) {
    if (is_temp_name(prefix, name)) out.emplace_back(name);
  });
  if (!s) return s.error();
  return out;
}

std::string path_in(const std::string& dir, const std::string& name) { return dir + "/" + name; }

}  // namespace mlos::checkpoint
