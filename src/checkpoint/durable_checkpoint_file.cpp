// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/durable_checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_format.h"
#include "checkpoint/checkpoint_names.h"
#include "os/durable_commit.h"
#include "os/unique_fd.h"

namespace mlos::checkpoint {

namespace {

// Payload bytes per write(2): small enough that the hash of a piece and its
// write read it from cache, large enough that system calls cost nothing.
constexpr size_t kWriteChunk = 1 << 20;

}  // namespace

Status write_checkpoint_file(const std::string& dir, int dir_fd, std::string_view prefix, uint64_t sequence,
                             const void* data, size_t size) {
  const std::string tmp = path_in(dir, temp_name(prefix, sequence));
  auto fill = [&](int fd) -> Status {
    PayloadHasher hasher;
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t off = 0; off < size; off += kWriteChunk) {
      const size_t n = std::min(kWriteChunk, size - off);
      hasher.update(bytes + off, n);
      if (Status s = os::write_all(fd, bytes + off, n, "cannot write " + tmp); !s) return s;
    }
    Footer footer;
    footer.payload_length = size;
    footer.sequence = sequence;
    footer.payload_hash = hasher.digest();
    const FooterBytes footer_bytes = encode_footer(footer);
    return os::write_all(fd, footer_bytes.data(), footer_bytes.size(), "cannot write the footer of " + tmp);
  };
  // A fresh name: a failed directory sync takes the new checkpoint back, so
  // the newest one readers see is the previous one, as the error says.
  return os::commit_file_durably(dir, dir_fd, tmp, path_in(dir, final_name(prefix, sequence)), fill,
                                 os::OnDirectorySyncFailure::kUnlinkNewFile);
}

Status write_file_durably(const std::string& path, const void* data, size_t size) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (slash != std::string::npos && slash + 1 == path.size()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " names a directory, not a file");
  }
  os::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) {
    const int err = errno;
    return make_sys_error(err, "cannot open the directory " + dir,
                          err == ENOENT || err == ENOTDIR ? MLOS_ERR_NOT_FOUND : MLOS_ERR_IO);
  }
  static std::atomic<uint64_t> attempt{0};
  const std::string tmp =
      path + ".mlos-tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt.fetch_add(1));
  auto fill = [&](int fd) -> Status {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t off = 0; off < size; off += kWriteChunk) {
      if (Status s = os::write_all(fd, bytes + off, std::min(kWriteChunk, size - off), "cannot write " + tmp); !s) {
        return s;
      }
    }
    return Status::Ok();
  };
  // As documented (checkpoint.h): a failed directory sync takes the file
  // back, so nothing of a write reported failed stays visible.
  return os::commit_file_durably(dir, dir_fd.get(), tmp, path, fill, os::OnDirectorySyncFailure::kUnlinkNewFile);
}

}  // namespace mlos::checkpoint
