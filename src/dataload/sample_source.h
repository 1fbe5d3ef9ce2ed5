/* SPDX-License-Identifier: Apache-2.0 */
// Where training samples come from: a dataset as a numbered list of
// encoded samples (image bytes plus an integer label) that many worker
// threads read concurrently and in any order.
//
// Three layouts, each opened once and indexed up front so that read(i) is
// one bounded read with no shared mutable state:
//   - an ImageFolder tree (root/<class>/**/<image>), ordered and labelled
//     exactly as torchvision.datasets.ImageFolder;
//   - a list file of "path<TAB>label" lines;
//   - WebDataset-style uncompressed tar shards (<key>.jpg + <key>.cls),
//     read with pread from descriptors opened at open time.
// open_source() picks one from a single string, as a command line gives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "dataload/scratch_buffer.h"
#include "os/unique_fd.h"

namespace mlos::dataload {

// Where one sample's encoded bytes are: `length` bytes at `offset` of
// descriptor `fd`. For a file per sample, the file was opened for it
// (`owned`, closed with the extent); for a shard member, fd is the shard's,
// open as long as the source is.
struct SampleExtent {
  os::UniqueFd owned;
  int fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual size_t size() const = 0;  // number of samples, > 0
  // Sample i's class index (>= 0). Requires i < size(); -1 otherwise.
  virtual int64_t label(size_t i) const = 0;
  // Names sample i in error reports: its path, or "shard.tar:member".
  virtual std::string describe(size_t i) const = 0;
  // Where sample i's bytes are, without reading them: for a file per
  // sample, its file opened (O_RDONLY) and its size taken. MLOS_ERR_IO
  // with the path and errno when the file is gone or unreadable;
  // MLOS_ERR_INVALID_ARGUMENT for i >= size(), a file that is not regular,
  // or a sample over SourceOptions::max_sample_bytes. Thread-safe.
  virtual Result<SampleExtent> open_sample(size_t i) const = 0;
  // Sample i's encoded bytes, read with pread into `buffer` (grown as
  // needed); the span points into it and is valid until the buffer is next
  // used. open_sample's errors, and MLOS_ERR_IO when the file is shorter
  // than its extent (truncated mid-epoch). Thread-safe: concurrent calls
  // need only distinct buffers.
  Result<std::span<const uint8_t>> read(size_t i, ScratchBuffer& buffer) const;
  // Hint that sample i is read soon: posix_fadvise(POSIX_FADV_WILLNEED)
  // on its bytes. May do nothing; never fails. Thread-safe.
  virtual void will_read(size_t i) const { (void)i; }
  // Class names by label, where the source has them (ImageFolder).
  virtual std::vector<std::string> class_names() const { return {}; }
};

struct SourceOptions {
  // A sample larger than this is refused by read(): a corrupt index or a
  // stray huge file must not make a worker allocate gigabytes.
  size_t max_sample_bytes = size_t{64} << 20;
};

// torchvision.datasets.ImageFolder(root): classes are the sorted names of
// root's subdirectories (symlinks followed), labels their index; samples
// are, class by class, the files under each class directory (symlinks
// followed) whose lower-cased name ends in an IMG_EXTENSIONS suffix, in
// the order of sorted(os.walk(...)) then sorted file names. Paths in
// describe() are root + "/" + relative path.
// MLOS_ERR_NOT_FOUND when root is missing, has no class directory, or a
// class has no image (naming the classes, as torchvision's
// FileNotFoundError does); MLOS_ERR_IO for an unreadable directory
// (torchvision skips those silently; a dataset that silently shrinks is
// worse than one that fails to open).
Result<std::unique_ptr<SampleSource>> open_image_folder(const std::string& root, const SourceOptions& options = {});

// A text file of "path<TAB>label" lines: the path absolute or relative to
// the list file's directory (split at the last TAB, so paths may hold
// TABs), the label a decimal integer >= 0. Blank lines and lines starting
// with '#' are skipped; a trailing '\r' is ignored. A malformed line, or a
// list with no samples, is MLOS_ERR_INVALID_ARGUMENT naming the line.
// Sample files are not checked at open (a stat per sample would make
// opening a million-sample list slow); read() reports a missing one.
Result<std::unique_ptr<SampleSource>> open_file_list(const std::string& list_file, const SourceOptions& options = {});

// WebDataset-style uncompressed tar shards, in the order given: members
// named <key>.<ext> with the same key (the name up to the first '.' after
// the last '/') are one sample when adjacent; its image is the member
// whose lower-cased <ext> is jpg, jpeg, png, ppm, bmp, pgm, tif, tiff or
// webp, its label the decimal text of <key>.cls. Other members (.json,
// .seg.png, ...) are ignored, as are members with no '.' in their name.
// Each shard is indexed at open (tar_index.h) and stays open.
// MLOS_ERR_INVALID_ARGUMENT naming the shard and byte offset for a corrupt
// or truncated tar, naming the key for a sample with no image, two images,
// no .cls or a bad label, or a key split into non-adjacent runs; for no
// shards or no samples at all. MLOS_ERR_NOT_FOUND / MLOS_ERR_IO when a
// shard cannot be opened.
Result<std::unique_ptr<SampleSource>> open_tar_shards(const std::vector<std::string>& shards,
                                                      const SourceOptions& options = {});

// Shard names from a pattern: WebDataset brace expansion when it holds a
// '{' ("dir/shard-{000000..000009}.tar": decimal ranges, zero-padded to
// the wider bound when either bound has a leading zero, as the braceexpand
// package does; "{a,b}" lists; several groups multiply; no nesting), each
// name required to exist; otherwise glob(3). Sorted (byte order), without
// duplicates. MLOS_ERR_NOT_FOUND when nothing matches or an expanded name
// does not exist; MLOS_ERR_INVALID_ARGUMENT for unbalanced or nested
// braces, a malformed range, or more than a million names.
Result<std::vector<std::string>> expand_shard_pattern(const std::string& pattern);

// One string to a source: an existing directory -> open_image_folder; an
// existing path ending in ".tar" -> open_tar_shards; another existing
// regular file -> open_file_list; a spec that names nothing but holds '{',
// '*', '?' or '[' -> expand_shard_pattern then open_tar_shards (an
// existing path is never read as a pattern). MLOS_ERR_NOT_FOUND when
// nothing exists or matches.
Result<std::unique_ptr<SampleSource>> open_source(const std::string& spec, const SourceOptions& options = {});

}  // namespace mlos::dataload
