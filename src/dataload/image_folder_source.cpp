// SPDX-License-Identifier: Apache-2.0
// open_image_folder: torchvision's find_classes and make_dataset
// (torchvision/datasets/folder.py) in C++.
//
// Order is the subtle part. make_dataset iterates
// `sorted(os.walk(class_dir, followlinks=True))`, which sorts the walk's
// (root, dirs, files) tuples by root path string, not in depth-first
// order: "c/b", "c/b-c", "c/b.d", "c/b/x" ('-' and '.' sort before '/').
// Python compares str by code point, which for UTF-8 names is byte order,
// so std::string's comparison matches (names that are not valid UTF-8,
// which Python decodes to surrogate escapes, may sort differently).
#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "dataload/file_reads.h"
#include "dataload/file_set_source.h"
#include "dataload/sample_source.h"

namespace mlos::dataload {
namespace {

// torchvision.datasets.folder.IMG_EXTENSIONS.
constexpr std::array<std::string_view, 9> kImageExtensions = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                                              ".pgm", ".tif",  ".tiff", ".webp"};

// has_file_allowed_extension: filename.lower().endswith(IMG_EXTENSIONS).
// ASCII lower-casing is exact here: no non-ASCII character lower-cases to
// a suffix of these.
bool has_image_extension(std::string_view name) {
  std::string lower(name.size() >= 5 ? name.substr(name.size() - 5) : name);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return std::any_of(kImageExtensions.begin(), kImageExtensions.end(),
                     [&](std::string_view ext) { return std::string_view(lower).ends_with(ext); });
}

std::string join(const std::string& dir, const std::string& name) {
  if (name.empty()) return dir;
  return dir.empty() ? name : dir + "/" + name;
}

struct WalkedDirectory {
  std::string relative;  // to the class directory; "" for itself
  std::vector<std::string> files;
};

// os.walk(class_dir, followlinks=True), every directory listed once per
// path that reaches it (as Python does), except that a directory which is
// its own ancestor is not entered again: Python would follow such a
// symlink loop until the path fails with ELOOP.
Result<std::vector<WalkedDirectory>> walk(const std::string& class_dir, dev_t dev, ino_t ino) {
  struct Pending {
    std::string relative;
    std::vector<std::pair<dev_t, ino_t>> ancestors;  // including itself
  };
  std::vector<WalkedDirectory> walked;
  std::vector<Pending> stack{{"", {{dev, ino}}}};
  while (!stack.empty()) {
    Pending dir = std::move(stack.back());
    stack.pop_back();
    auto entries = list_directory(join(class_dir, dir.relative));
    if (!entries.ok()) {
      Error e = entries.error();
      e.code = MLOS_ERR_IO;  // it existed when its parent was listed
      return e;
    }
    WalkedDirectory out{dir.relative, {}};
    for (auto& entry : *entries) {
      if (!entry.is_dir) {
        out.files.push_back(std::move(entry.name));
        continue;
      }
      const std::pair<dev_t, ino_t> id{entry.dev, entry.ino};
      if (std::find(dir.ancestors.begin(), dir.ancestors.end(), id) != dir.ancestors.end()) continue;
      Pending child{join(dir.relative, entry.name), dir.ancestors};
      child.ancestors.push_back(id);
      stack.push_back(std::move(child));
    }
    walked.push_back(std::move(out));
  }
  // sorted(os.walk(...)): by root = class_dir + "/" + relative, i.e. by
  // relative with the class directory itself ("") first.
  std::sort(walked.begin(), walked.end(),
            [](const WalkedDirectory& a, const WalkedDirectory& b) { return a.relative < b.relative; });
  return walked;
}

}  // namespace

Result<std::unique_ptr<SampleSource>> open_image_folder(const std::string& root_in, const SourceOptions& options) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();

  // find_classes: sorted(entry.name for entry in os.scandir(dir) if entry.is_dir()).
  auto entries = list_directory(root);
  if (!entries.ok()) return entries.error();
  std::vector<DirectoryEntry> classes;
  for (auto& entry : *entries) {
    if (entry.is_dir) classes.push_back(std::move(entry));
  }
  if (classes.empty()) return make_error(MLOS_ERR_NOT_FOUND, "Couldn't find any class folder in " + root + ".");
  std::sort(classes.begin(), classes.end(),
            [](const DirectoryEntry& a, const DirectoryEntry& b) { return a.name < b.name; });

  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  std::vector<std::string> class_names;
  std::vector<std::string> empty_classes;
  for (size_t label = 0; label < classes.size(); ++label) {
    const std::string class_dir = root + "/" + classes[label].name;
    class_names.push_back(classes[label].name);
    auto walked = walk(class_dir, classes[label].dev, classes[label].ino);
    if (!walked.ok()) return walked.error();
    const size_t before = paths.size();
    for (auto& dir : *walked) {
      std::sort(dir.files.begin(), dir.files.end());
      for (const auto& file : dir.files) {
        if (!has_image_extension(file)) continue;
        paths.push_back(join(join(class_dir, dir.relative), file));
        labels.push_back(static_cast<int64_t>(label));
      }
    }
    if (paths.size() == before) empty_classes.push_back(classes[label].name);
  }
  if (!empty_classes.empty()) {
    std::string names;
    for (const auto& name : empty_classes) names += (names.empty() ? "" : ", ") + name;
    std::string extensions;
    for (auto ext : kImageExtensions) extensions += (extensions.empty() ? "" : ", ") + std::string(ext);
    return make_error(MLOS_ERR_NOT_FOUND, "Found no valid file for the classes " + names + " in " + root +
                                              ". Supported extensions are: " + extensions);
  }
  return std::unique_ptr<SampleSource>(
      std::make_unique<FileSetSource>(std::move(paths), std::move(labels), std::move(class_names), options));
}

}  // namespace mlos::dataload
