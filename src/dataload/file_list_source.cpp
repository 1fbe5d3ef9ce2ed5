// SPDX-License-Identifier: Apache-2.0
// open_file_list: a "path<TAB>label" text file to a FileSetSource.
#include <charconv>
#include <string_view>
#include <utility>

#include "dataload/file_reads.h"
#include "dataload/file_set_source.h"
#include "dataload/sample_source.h"

namespace mlos::dataload {
namespace {

// A list of ~100 bytes per line: room for ten million samples.
constexpr size_t kMaxListBytes = size_t{1} << 30;

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\v\f") == std::string_view::npos;
}

}  // namespace

Result<std::unique_ptr<SampleSource>> open_file_list(const std::string& list_file, const SourceOptions& options) {
  ScratchBuffer buffer;
  auto bytes = read_whole_file(list_file, kMaxListBytes, buffer);
  if (!bytes.ok()) {
    Error e = bytes.error();
    if (e.sys_errno == ENOENT) e.code = MLOS_ERR_NOT_FOUND;
    e.message = "file list: " + e.message;
    return e;
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  const size_t slash = list_file.rfind('/');
  const std::string base = slash == std::string::npos ? "" : list_file.substr(0, slash + 1);

  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (is_blank(line) || line.front() == '#') continue;

    auto malformed = [&](const std::string& why) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, list_file + ":" + std::to_string(line_number) + ": " + why +
                                                       " (expected \"path<TAB>label\", label an integer >= 0)");
    };
    const size_t tab = line.rfind('\t');
    if (tab == std::string_view::npos) return malformed("no TAB");
    const std::string_view path = line.substr(0, tab);
    const std::string_view label_text = line.substr(tab + 1);
    if (path.empty()) return malformed("empty path");
    int64_t label = -1;
    const auto [end_ptr, ec] = std::from_chars(label_text.data(), label_text.data() + label_text.size(), label);
    if (label_text.empty() || ec != std::errc() || end_ptr != label_text.data() + label_text.size() || label < 0) {
      return malformed("bad label \"" + std::string(label_text) + "\"");
    }
    paths.push_back(path.front() == '/' ? std::string(path) : base + std::string(path));
    labels.push_back(label);
  }
  if (paths.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "file list " + list_file + " names no samples");
  return std::unique_ptr<SampleSource>(std::make_unique<FileSetSource>(std::move(paths), std::move(labels),
                                                                       std::vector<std::string>{}, options));
}

}  // namespace mlos::dataload
