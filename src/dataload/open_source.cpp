// SPDX-License-Identifier: Apache-2.0
// open_source: one command-line string to the SampleSource it names.
#include <sys/stat.h>

#include <cerrno>

#include "dataload/sample_source.h"

namespace mlos::dataload {

Result<std::unique_ptr<SampleSource>> open_source(const std::string& spec, const SourceOptions& options) {
  if (spec.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "empty data source");
  // An existing path is taken literally, so a directory named "imgs[v2]"
  // is a folder, not a glob that would not match it.
  struct stat st {};
  if (::stat(spec.c_str(), &st) != 0) {
    const int err = errno;
    if (spec.find_first_of("{*?[") != std::string::npos) {
      auto shards = expand_shard_pattern(spec);
      if (!shards.ok()) return shards.error();
      return open_tar_shards(*shards, options);
    }
    return make_sys_error(err, "data source " + spec + " cannot be found",
                          err == ENOENT || err == ENOTDIR ? MLOS_ERR_NOT_FOUND : MLOS_ERR_IO);
  }
  if (S_ISDIR(st.st_mode)) return open_image_folder(spec, options);
  if (spec.ends_with(".tar")) return open_tar_shards({spec}, options);
  if (S_ISREG(st.st_mode)) return open_file_list(spec, options);
  return make_error(MLOS_ERR_INVALID_ARGUMENT, "data source " + spec + " is neither a directory nor a regular file");
}

}  // namespace mlos::dataload
