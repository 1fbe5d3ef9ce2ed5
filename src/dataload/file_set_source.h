/* SPDX-License-Identifier: Apache-2.0 */
// A SampleSource over one file per sample (ImageFolder trees and list
// files): paths and labels held in memory, each read an open/read/close of
// its own, so nothing is shared between threads and a deleted file fails
// only its own read.
#pragma once

#include <string>
#include <vector>

#include "dataload/sample_source.h"

namespace mlos::dataload {

class FileSetSource final : public SampleSource {
 public:
  // paths.size() == labels.size() > 0.
  FileSetSource(std::vector<std::string> paths, std::vector<int64_t> labels, std::vector<std::string> class_names,
                const SourceOptions& options);

  size_t size() const override { return paths_.size(); }
  int64_t label(size_t i) const override { return i < labels_.size() ? labels_[i] : -1; }
  std::string describe(size_t i) const override;
  Result<SampleExtent> open_sample(size_t i) const override;
  void will_read(size_t i) const override;
  std::vector<std::string> class_names() const override { return class_names_; }

 private:
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
  std::vector<std::string> class_names_;
  SourceOptions options_;
};

}  // namespace mlos::dataload
