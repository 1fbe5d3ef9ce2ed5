// SPDX-License-Identifier: Apache-2.0
// mlos_training_record_read and mlos_training_announce_reads
// (include/mlos/training.h): paths are checked and made absolute here; the
// job appends them to its read log (engine/read_log.h).
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "api/api_guard.h"
#include "core/utf8.h"
#include "mlos/training.h"

using mlos::make_error;
using mlos::record_error;

namespace {

using mlos::api::find_job;
using mlos::api::guarded;

// `path` checked (not NULL, not empty, UTF-8, shorter than PATH_MAX once
// absolute) and made absolute against the working directory.
mlos::Result<std::string> absolute_read_path(const char* path, const std::string& what) {
  if (path == nullptr || *path == '\0') return make_error(MLOS_ERR_INVALID_ARGUMENT, what + " is NULL or empty");
  std::string p(path);
  if (p.size() >= PATH_MAX || mlos::first_invalid_utf8(p) != std::string::npos) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, what + " is longer than PATH_MAX or not UTF-8");
  }
  if (p[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == nullptr) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, what + " is relative and the working directory is unknown");
    }
    p = std::string(cwd) + "/" + p;
    if (p.size() >= PATH_MAX) return make_error(MLOS_ERR_INVALID_ARGUMENT, what + " is longer than PATH_MAX");
  }
  return p;
}

}  // namespace

extern "C" {

int mlos_training_record_read(mlos_training_resources_t* resources, const char* path, uint64_t offset,
                              uint64_t length) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    auto p = absolute_read_path(path, "path");
    if (!p) return record_error(p.error());
    if (offset > INT64_MAX || length > INT64_MAX - offset) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "offset + length is past the largest file offset"));
    }
    return mlos::to_code(job->record_read(mlos::policy::FileRead{std::move(*p), offset, length}));
  });
}

int mlos_training_announce_reads(mlos_training_resources_t* resources, const char* const* paths, size_t count) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (paths == nullptr && count > 0) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "paths is NULL and count is not 0"));
    }
    std::vector<std::string> plan;
    plan.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      auto p = absolute_read_path(paths[i], "paths[" + std::to_string(i) + "]");
      if (!p) return record_error(p.error());
      plan.push_back(std::move(*p));
    }
    return mlos::to_code(job->announce_reads(std::move(plan)));
  });
}

}  // extern "C"
