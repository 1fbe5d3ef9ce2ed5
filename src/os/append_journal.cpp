// SPDX-License-Identifier: Apache-2.0
#include "os/append_journal.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>

#include "os/durable_file.h"

namespace mlos::os {

namespace {

uint32_t crc_of(std::string_view text) {
  return static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

// The entry on one line (without its newline), or nullopt if the line is
// not a whole, matching entry.
std::optional<nlohmann::json> parse_line(std::string_view line) {
  if (line.size() < 10 || line[8] != ' ') return std::nullopt;
  uint32_t recorded = 0;
  for (size_t i = 0; i < 8; ++i) {
    const char c = line[i];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    recorded = recorded << 4 | static_cast<uint32_t>(digit);
  }
  const std::string_view body = line.substr(9);
  if (crc_of(body) != recorded) return std::nullopt;
  nlohmann::json entry = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (entry.is_discarded()) return std::nullopt;
  return entry;
}

}  // namespace

Result<std::vector<nlohmann::json>> AppendJournal::read() {
  auto text = read_whole_file(path_);
  if (!text) return text.error();
  std::vector<nlohmann::json> entries;
  size_ = 0;
  truncate_to_size_ = false;
  if (!text->has_value()) {
    read_ = true;
    return entries;
  }
  const std::string& all = **text;
  size_t pos = 0;
  int line_no = 0;
  while (pos < all.size()) {
    ++line_no;
    const size_t eol = all.find('\n', pos);
    const bool last = eol == std::string::npos || eol + 1 == all.size();
    auto entry = eol == std::string::npos ? std::nullopt : parse_line(std::string_view(all).substr(pos, eol - pos));
    if (!entry) {
      // A crash mid-append leaves a last line without its newline (or with
      // zeros the file system allotted): never acknowledged, dropped. A
      // whole line that fails its checksum is damage, wherever it is.
      if (last && (eol == std::string::npos || all.find_first_not_of('\0', pos) == std::string::npos ||
                   all.substr(pos, eol - pos).find('\0') != std::string::npos)) {
        truncate_to_size_ = true;
        break;
      }
      return make_error(MLOS_ERR_STATE_CORRUPT, path_ + ": line " + std::to_string(line_no) +
                                                    " fails its checksum or is not an entry; the file was left "
                                                    "untouched");
    }
    entries.push_back(std::move(*entry));
    pos = eol + 1;
    size_ = pos;
  }
  read_ = true;
  return entries;
}

Status AppendJournal::open_for_append() {
  if (fd_.valid()) return Status::Ok();
  // Where the whole entries end: never append after a damaged journal.
  if (!read_) {
    if (auto entries = read(); !entries) return entries.error();
  }
  fd_.reset(open(path_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd_.valid()) return make_sys_error(errno, "cannot open " + path_);
  if (truncate_to_size_) {  // cut the torn tail read() found
    if (ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) return make_sys_error(errno, "truncate " + path_);
    truncate_to_size_ = false;
  }
  return Status::Ok();
}

Status AppendJournal::append(const nlohmann::json& entry) {
  if (Status s = open_for_append(); !s) return s;
  const std::string body = entry.dump();  // compact, one line (strings escape newlines)
  char crc[10];
  snprintf(crc, sizeof crc, "%08x ", crc_of(body));
  const std::string line = std::string(crc, 9) + body + "\n";
  // On failure the part written is cut off again, so the file never holds
  // a half entry that a later, shorter one would not cover.
  auto failed = [&](const char* what) {
    const int err = errno;
    (void)!ftruncate(fd_.get(), static_cast<off_t>(size_));
    return make_sys_error(err, std::string(what) + " " + path_);
  };
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = pwrite(fd_.get(), line.data() + done, line.size() - done, static_cast<off_t>(size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed("write");
    done += static_cast<size_t>(n);
  }
  if (fdatasync(fd_.get()) != 0) return failed("fdatasync");
  size_ += line.size();
  return Status::Ok();
}

Status AppendJournal::clear() {
  if (Status s = open_for_append(); !s) return s;
  if (ftruncate(fd_.get(), 0) != 0) return make_sys_error(errno, "truncate " + path_);
  if (fdatasync(fd_.get()) != 0) return make_sys_error(errno, "fdatasync " + path_);
  size_ = 0;
  return Status::Ok();
}

}  // namespace mlos::os
