// SPDX-License-Identifier: Apache-2.0
// open_tar_shards: WebDataset shards as a SampleSource.
//
// Samples are grouped as webdataset's tar_file_expander + group_by_keys
// do: a member name splits into key and extension at the first '.' after
// the last '/' (the regex ^((?:.*/|)[^.]+)[.]([^/]*)$, so "a/k.seg.png" is
// key "a/k", extension "seg.png", and a name with nothing before its first
// dot is no sample member); adjacent members with the same key form one
// sample. webdataset would yield a key that recurs later in a shard as a
// second, partial sample; here it is an error, since a sample must have
// exactly one image and one .cls. A run of members with neither an image
// nor a .cls (metadata such as __meta__.json) is not a sample and is
// skipped.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "dataload/file_reads.h"
#include "dataload/sample_source.h"
#include "dataload/tar_index.h"
#include "os/unique_fd.h"

namespace mlos::dataload {
namespace {

constexpr std::array<std::string_view, 9> kImageExtensions = {"jpg", "jpeg", "png", "ppm", "bmp",
                                                              "pgm", "tif", "tiff", "webp"};
constexpr uint64_t kMaxClsBytes = 64;

bool is_image_extension(std::string_view ext) {
  if (ext.size() > 4) return false;
  std::string lower(ext);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return std::find(kImageExtensions.begin(), kImageExtensions.end(), lower) != kImageExtensions.end();
}

struct TarSample {
  uint32_t shard = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  int64_t label = 0;
  std::string member;  // the image member's name
};

class TarShardSource final : public SampleSource {
 public:
  TarShardSource(std::vector<std::string> shards, std::vector<os::UniqueFd> fds, std::vector<TarSample> samples,
                 const SourceOptions& options)
      : shards_(std::move(shards)), fds_(std::move(fds)), samples_(std::move(samples)), options_(options) {}

  size_t size() const override { return samples_.size(); }
  int64_t label(size_t i) const override { return i < samples_.size() ? samples_[i].label : -1; }
  std::string describe(size_t i) const override {
    if (i >= samples_.size()) return "<sample " + std::to_string(i) + " out of range>";
    return shards_[samples_[i].shard] + ":" + samples_[i].member;
  }
  Result<SampleExtent> open_sample(size_t i) const override {
    if (i >= samples_.size()) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "sample " + std::to_string(i) + " out of range (" +
                                                       std::to_string(samples_.size()) + " samples)");
    }
    const TarSample& s = samples_[i];
    if (s.size > options_.max_sample_bytes) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, describe(i) + " has " + std::to_string(s.size) +
                                                       " bytes, over the limit of " +
                                                       std::to_string(options_.max_sample_bytes));
    }
    SampleExtent extent;
    extent.fd = fds_[s.shard].get();
    extent.offset = s.offset;
    extent.length = s.size;
    return extent;
  }
  void will_read(size_t i) const override {
    if (i < samples_.size()) advise_will_need(fds_[samples_[i].shard].get(), samples_[i].offset, samples_[i].size);
  }

 private:
  std::vector<std::string> shards_;
  std::vector<os::UniqueFd> fds_;
  std::vector<TarSample> samples_;
  SourceOptions options_;
};

// One run of adjacent members sharing a key.
struct Group {
  std::string_view key;  // into the first member's name
  uint64_t offset = 0;  // of its first member's header
  const TarMember* image = nullptr;
  const TarMember* second_image = nullptr;
  const TarMember* cls = nullptr;
};

Status add_sample(const Group& g, int fd, const std::string& shard, uint32_t shard_index,
                  std::vector<TarSample>& out) {
  if (g.image == nullptr && g.cls == nullptr) return Status::Ok();
  auto bad = [&](const std::string& what) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, shard + ": sample \"" + std::string(g.key) + "\" (at byte offset " +
                                                     std::to_string(g.offset) + ") " + what);
  };
  if (g.image == nullptr) return bad("has no image member (.jpg, .jpeg, .png, .ppm, .bmp, .pgm, .tif, .tiff, .webp)");
  if (g.second_image != nullptr) return bad("has two image members, " + g.image->name + " and " + g.second_image->name);
  if (g.cls == nullptr) return bad("has no .cls member (its label)");
  if (g.cls->size > kMaxClsBytes) return bad("has a .cls member of " + std::to_string(g.cls->size) + " bytes");
  std::array<uint8_t, kMaxClsBytes> text_bytes{};
  if (Status s = pread_exact(fd, g.cls->data_offset, {text_bytes.data(), g.cls->size}, shard + ":" + g.cls->name);
      !s.ok()) {
    return s;
  }
  std::string_view text(reinterpret_cast<const char*>(text_bytes.data()), g.cls->size);
  const auto blank = std::string_view(" \t\r\n\v\f");
  text.remove_prefix(std::min(text.size(), text.find_first_not_of(blank)));
  text.remove_suffix(text.size() - std::min(text.size(), text.find_last_not_of(blank) + 1));
  int64_t label = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), label);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || label < 0) {
    return bad("has a .cls member that is not an integer >= 0: \"" + std::string(text) + "\"");
  }
  out.push_back({shard_index, g.image->data_offset, g.image->size, label, g.image->name});
  return Status::Ok();
}

Status index_shard(const std::string& shard, uint32_t shard_index, os::UniqueFd& fd_out,
                   std::vector<TarSample>& samples) {
  os::UniqueFd fd(::open(shard.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return make_sys_error(err, "cannot open shard " + shard, err == ENOENT ? MLOS_ERR_NOT_FOUND : MLOS_ERR_IO);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_sys_error(errno, "cannot stat shard " + shard, MLOS_ERR_IO);
  if (!S_ISREG(st.st_mode)) return make_error(MLOS_ERR_INVALID_ARGUMENT, "shard " + shard + " is not a regular file");
  const int raw_fd = fd.get();
  auto members = index_tar(
      [&](uint64_t offset, std::span<uint8_t> out) { return pread_exact(raw_fd, offset, out, "shard " + shard); },
      static_cast<uint64_t>(st.st_size), shard);
  if (!members.ok()) return members.error();

  // Groups first, then samples: a key that recurs is reported as such,
  // not as the incomplete sample its first run would be.
  std::vector<Group> groups;
  std::unordered_set<std::string_view> finished_keys;
  for (const TarMember& m : *members) {
    const size_t slash = m.name.rfind('/');
    const size_t base = slash == std::string::npos ? 0 : slash + 1;
    const size_t dot = m.name.find('.', base);
    if (dot == std::string::npos || dot == base) continue;  // no "<key>.<ext>"
    const std::string_view key = std::string_view(m.name).substr(0, dot);
    const std::string_view ext = std::string_view(m.name).substr(dot + 1);
    if (groups.empty() || key != groups.back().key) {
      if (!groups.empty()) finished_keys.insert(groups.back().key);
      if (finished_keys.count(key) != 0) {
        return make_error(MLOS_ERR_INVALID_ARGUMENT, shard + ": key \"" + std::string(key) + "\" recurs at byte offset " +
                                                         std::to_string(m.header_offset) +
                                                         " after other keys (a sample's members must be adjacent)");
      }
      groups.push_back(Group{key, m.header_offset});
    }
    Group& group = groups.back();
    if (is_image_extension(ext)) {
      (group.image == nullptr ? group.image : group.second_image) = &m;
    } else if (ext == "cls") {
      group.cls = &m;
    }
  }
  for (const Group& group : groups) {
    if (Status s = add_sample(group, raw_fd, shard, shard_index, samples); !s.ok()) return s;
  }
  fd_out = std::move(fd);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SampleSource>> open_tar_shards(const std::vector<std::string>& shards,
                                                      const SourceOptions& options) {
  if (shards.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "no tar shards given");
  std::vector<os::UniqueFd> fds(shards.size());
  std::vector<TarSample> samples;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (Status s = index_shard(shards[i], static_cast<uint32_t>(i), fds[i], samples); !s.ok()) return s.error();
  }
  if (samples.empty()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "the tar shards (" + shards.front() +
                                                     (shards.size() > 1 ? ", ..." : "") + ") hold no samples");
  }
  return std::unique_ptr<SampleSource>(std::make_unique<TarShardSource>(shards, std::move(fds), std::move(samples), options));
}

}  // namespace mlos::dataload
