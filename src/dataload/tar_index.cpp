// SPDX-License-Identifier: Apache-2.0
#include "dataload/tar_index.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>

namespace mlos::dataload {
namespace {

constexpr uint64_t kBlock = 512;
constexpr uint64_t kMaxExtendedHeader = uint64_t{1} << 20;

// Field offsets in a ustar header block.
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kSize = 124, kSizeLen = 12;
constexpr size_t kChecksum = 148, kChecksumLen = 8;
constexpr size_t kTypeflag = 156;
constexpr size_t kMagic = 257;
constexpr size_t kPrefix = 345, kPrefixLen = 155;

using Block = std::array<uint8_t, kBlock>;

std::string_view field(const Block& b, size_t offset, size_t length) {
  const auto* begin = reinterpret_cast<const char*>(b.data() + offset);
  const auto* nul = std::find(begin, begin + length, '\0');
  return {begin, static_cast<size_t>(nul - begin)};
}

// A numeric header field as tarfile's nti() reads it: GNU base-256 when
// the high bit of the first byte is set (0x80: positive; 0xFF: negative,
// refused), otherwise octal text up to the first NUL, blank-padded either
// side, empty meaning 0. nullopt when malformed or over 2^63.
std::optional<uint64_t> parse_number(const Block& b, size_t offset, size_t length) {
  if (b[offset] & 0x80) {
    if (b[offset] != 0x80) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = 1; i < length; ++i) {
      if (v > (uint64_t{1} << 55)) return std::nullopt;
      v = (v << 8) | b[offset + i];
    }
    return v;
  }
  std::string_view text = field(b, offset, length);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return 0;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 8);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

bool checksum_matches(const Block& b) {
  const auto stored = parse_number(b, kChecksum, kChecksumLen);
  if (!stored) return false;
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum && i < kChecksum + kChecksumLen;
    const uint8_t byte = in_field ? uint8_t{' '} : b[i];
    unsigned_sum += byte;
    signed_sum += static_cast<int8_t>(byte);
  }
  return *stored == unsigned_sum || static_cast<int64_t>(*stored) == signed_sum;
}

struct PaxOverrides {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// Records "<length> <key>=<value>\n", length counting the whole record.
// Returns the offset within `data` of the first malformed record, or
// nullopt when all parse; `sparse` set when a GNU.sparse record is seen.
std::optional<size_t> parse_pax(std::string_view data, PaxOverrides& out, bool& sparse) {
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t space = data.find(' ', pos);
    if (space == std::string_view::npos) return pos;
    size_t length = 0;
    const auto [end, ec] = std::from_chars(data.data() + pos, data.data() + space, length);
    if (ec != std::errc() || end != data.data() + space || length <= space - pos + 1 || length > data.size() - pos) {
      return pos;
    }
    const std::string_view record = data.substr(space + 1, length - (space - pos) - 1);
    if (record.empty() || record.back() != '\n') return pos;
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos) return pos;
    const std::string_view key = record.substr(0, eq);
    const std::string_view value = record.substr(eq + 1, record.size() - eq - 2);
    if (key == "path") {
      out.path = std::string(value);
    } else if (key == "size") {
      uint64_t size = 0;
      const auto [vend, vec] = std::from_chars(value.data(), value.data() + value.size(), size);
      if (value.empty() || vec != std::errc() || vend != value.data() + value.size()) return pos;
      out.size = size;
    } else if (key.starts_with("GNU.sparse.")) {
      sparse = true;
    }
    pos += length;
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<TarMember>> index_tar(const TarReader& read, uint64_t archive_size,
                                         const std::string& archive_name) {
  auto corrupt = [&](const std::string& what, uint64_t at) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      archive_name + ": " + what + " at byte offset " + std::to_string(at) + " (the archive has " +
                          std::to_string(archive_size) + " bytes)");
  };
  std::vector<TarMember> members;
  // Set by pax and GNU long-name headers for the member that follows.
  PaxOverrides pending;
  // Offset of the first such header, kNoRun when none is pending (not an
  // optional: GCC 12 warns, wrongly, that one may be used uninitialised).
  constexpr uint64_t kNoRun = ~uint64_t{0};
  uint64_t run_start = kNoRun;
  std::string extended;               // an extended header's data
  Block block{};

  uint64_t offset = 0;
  for (;;) {
    if (offset == archive_size) {
      if (run_start != kNoRun) return corrupt("archive ends after an extended header with no member", run_start);
      break;  // tarfile and GNU tar accept an archive cut at a member boundary
    }
    if (archive_size - offset < kBlock) return corrupt("truncated header", offset);
    if (Status s = read(offset, block); !s.ok()) return s.error();
    if (std::all_of(block.begin(), block.end(), [](uint8_t b) { return b == 0; })) {
      if (run_start != kNoRun) return corrupt("end-of-archive block after an extended header", offset);
      break;
    }
    if (!checksum_matches(block)) return corrupt("header checksum mismatch", offset);
    const auto header_size = parse_number(block, kSize, kSizeLen);
    if (!header_size) return corrupt("malformed size field", offset + kSize);
    const char type = static_cast<char>(block[kTypeflag]);
    const bool regular = type == '0' || type == '\0' || type == '7';
    const uint64_t size = regular && pending.size ? *pending.size : *header_size;
    const uint64_t data_offset = offset + kBlock;
    if (size > archive_size - data_offset) {
      return corrupt("member of " + std::to_string(size) + " bytes extends past the end of the archive", offset);
    }
    const uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;
    // Data padding cut off: the archive ends inside the last block.
    if (padded > archive_size - data_offset) return corrupt("truncated member padding", data_offset + size);

    if (type == 'K') {
      // A GNU long link name: belongs to the link member that follows
      // (which is skipped), but must not end the header run.
      if (run_start == kNoRun) run_start = offset;
    } else if (type == 'x' || type == 'L') {
      if (size > kMaxExtendedHeader) return corrupt("extended header over 1 MiB", offset);
      if (run_start == kNoRun) run_start = offset;
      extended.resize(size);
      if (Status s = read(data_offset, {reinterpret_cast<uint8_t*>(extended.data()), extended.size()}); !s.ok()) {
        return s.error();
      }
      if (type == 'L') {
        pending.path = extended.substr(0, extended.find('\0'));
      } else {
        bool sparse = false;
        if (auto bad = parse_pax(extended, pending, sparse)) return corrupt("malformed pax record", data_offset + *bad);
        if (sparse) return corrupt("pax sparse member (GNU.sparse records), not supported", offset);
      }
    } else {
      std::string name;
      if (pending.path) {
        name = std::move(*pending.path);
      } else {
        name = std::string(field(block, kName, kNameLen));
        // POSIX ustar ("ustar\0"): a long name's directory part is in the
        // prefix field. GNU headers ("ustar  \0") use that space otherwise.
        const std::string_view prefix = field(block, kPrefix, kPrefixLen);
        if (std::memcmp(block.data() + kMagic, "ustar\0", 6) == 0 && !prefix.empty()) {
          name = std::string(prefix) + "/" + name;
        }
      }
      const bool old_style_directory = type == '\0' && !name.empty() && name.back() == '/';
      if (regular && !old_style_directory) {
        members.push_back({std::move(name), run_start == kNoRun ? offset : run_start, data_offset, size});
      }
      pending = {};
      run_start = kNoRun;
    }
    offset = data_offset + padded;
  }
  return members;
}

}  // namespace mlos::dataload
