// SPDX-License-Identifier: Apache-2.0
#include "dataload/file_set_source.h"

#include <utility>

#include "dataload/file_reads.h"

namespace mlos::dataload {

FileSetSource::FileSetSource(std::vector<std::string> paths, std::vector<int64_t> labels,
                             std::vector<std::string> class_names, const SourceOptions& options)
    : paths_(std::move(paths)), labels_(std::move(labels)), class_names_(std::move(class_names)), options_(options) {}

std::string FileSetSource::describe(size_t i) const {
  if (i >= paths_.size()) return "<sample " + std::to_string(i) + " out of range>";
  return paths_[i];
}

Result<SampleExtent> FileSetSource::open_sample(size_t i) const {
  if (i >= paths_.size()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "sample " + std::to_string(i) + " out of range (" + std::to_string(paths_.size()) + " samples)");
  }
  auto file = open_regular_file(paths_[i], options_.max_sample_bytes);
  if (!file) return file.error();
  SampleExtent extent;
  extent.fd = file->fd.get();
  extent.length = file->size;
  extent.owned = std::move(file->fd);
  return extent;
}

void FileSetSource::will_read(size_t i) const {
  if (i < paths_.size()) advise_will_need(paths_[i]);
}

}  // namespace mlos::dataload
