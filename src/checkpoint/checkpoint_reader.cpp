// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/checkpoint_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "checkpoint/checkpoint_directory.h"
#include "os/log_sink.h"
#include "os/unique_fd.h"

namespace mlos::checkpoint {

namespace {

constexpr size_t kChunk = 1 << 20;

Error open_error(int err, const std::string& path) {
  const int code = err == ENOENT ? MLOS_ERR_NOT_FOUND : err == EACCES ? MLOS_ERR_PERMISSION : MLOS_ERR_SYSTEM;
  return make_sys_error(err, "cannot open checkpoint " + path, code);
}

Error corrupt(const std::string& path, const Error& why) {
  return make_error(MLOS_ERR_CHECKPOINT_CORRUPT, path + ": " + why.message);
}

// Reads exactly `size` bytes at `offset`; 0 or the errno (EIO for a file
// that shrank underneath).
int read_exact(int fd, void* dest, size_t size, uint64_t offset) {
  auto* p = static_cast<unsigned char*>(dest);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

// Opens, checks the footer and the length, then streams the payload through
// XXH3: into the buffer `allocate(length)` returns when given (nullptr there
// means NO_MEMORY), else through a scratch chunk.
Result<Footer> read_checked(const std::string& path, const std::function<unsigned char*(uint64_t)>& allocate) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer forever (and a device could wait for its carrier). Anything but
  // a regular file is then refused before a byte is read.
  os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return open_error(errno, path);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return make_sys_error(errno, "cannot stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return make_error(MLOS_ERR_CHECKPOINT_CORRUPT,
                      path + ": not a regular file (a FIFO, socket, device or directory)");
  }
  // Reads of a regular file are ordinary blocking reads again.
  if (const int fl = ::fcntl(fd.get(), F_GETFL); fl < 0 || ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK) != 0) {
    return make_sys_error(errno, "cannot clear O_NONBLOCK on " + path);
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (Status s = check_footer_fits(file_size); !s) return corrupt(path, s.error());
  FooterBytes raw{};
  if (int err = read_exact(fd.get(), raw.data(), raw.size(), file_size - kFooterSize)) {
    return make_sys_error(err, "cannot read the footer of " + path, MLOS_ERR_IO);
  }
  auto footer = decode_footer(raw.data());
  if (!footer) return corrupt(path, footer.error());
  if (Status s = check_file_length(*footer, file_size); !s) return corrupt(path, s.error());
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);

  unsigned char* out = nullptr;
  if (allocate) {
    out = allocate(footer->payload_length);
    if (out == nullptr) {
      return make_error(MLOS_ERR_NO_MEMORY, "cannot allocate " + std::to_string(footer->payload_length) +
                                                " bytes for checkpoint " + path);
    }
  }
  std::vector<unsigned char> scratch;
  PayloadHasher hasher;
  for (uint64_t off = 0; off < footer->payload_length;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, footer->payload_length - off));
    unsigned char* p = out != nullptr ? out + off : nullptr;
    if (p == nullptr) {
      scratch.resize(kChunk);
      p = scratch.data();
    }
    if (int err = read_exact(fd.get(), p, n, off)) return make_sys_error(err, "cannot read " + path, MLOS_ERR_IO);
    hasher.update(p, n);
    off += n;
  }
  if (Status s = check_payload_hash(*footer, hasher.digest()); !s) return corrupt(path, s.error());
  return footer;
}

}  // namespace

Result<Footer> verify_checkpoint_file(const std::string& path) {
  return read_checked(path, nullptr);
}

Result<LoadedCheckpoint> load_checkpoint_file(const std::string& path, std::optional<uint64_t> expected_sequence) {
  std::unique_ptr<unsigned char, void (*)(void*)> buf(nullptr, std::free);
  auto footer = read_checked(path, [&](uint64_t length) -> unsigned char* {
    // malloc(0) may return NULL; a one-byte block keeps "NULL = failure".
    const uint64_t bytes = length == 0 ? 1 : length;
    if (bytes > SIZE_MAX) return nullptr;
    buf.reset(static_cast<unsigned char*>(std::malloc(static_cast<size_t>(bytes))));
    return buf.get();
  });
  if (!footer) return footer.error();
  if (expected_sequence && footer->sequence != *expected_sequence) {
    return make_error(MLOS_ERR_CHECKPOINT_CORRUPT, path + ": footer sequence " + std::to_string(footer->sequence) +
                                                       " does not match the file name");
  }
  LoadedCheckpoint out;
  out.data = buf.release();
  out.size = static_cast<size_t>(footer->payload_length);
  out.sequence = footer->sequence;
  return out;
}

Result<LoadedCheckpoint> load_latest_checkpoint(const std::string& dir, std::string_view prefix) {
  auto entries = list_checkpoints(dir, prefix);
  if (!entries) return entries.error();
  if (entries->empty()) {
    return make_error(MLOS_ERR_NOT_FOUND, "no checkpoint with prefix \"" + std::string(prefix) + "\" in " + dir);
  }
  std::optional<Error> newest_failure;
  uint32_t skipped = 0;
  for (auto it = entries->rbegin(); it != entries->rend(); ++it) {
    auto loaded = load_checkpoint_file(path_in(dir, it->name), it->sequence);
    if (loaded) {
      loaded->damaged_skipped = skipped;
      return loaded;
    }
    if (loaded.error().code == MLOS_ERR_NO_MEMORY) return loaded.error();
    log_message(MLOS_LOG_WARN, "skipping checkpoint: " + loaded.error().describe());
    if (!newest_failure) newest_failure = loaded.error();
    ++skipped;
  }
  Error e = *newest_failure;
  e.code = MLOS_ERR_CHECKPOINT_CORRUPT;
  e.message = "none of the " + std::to_string(entries->size()) + " checkpoints in " + dir +
              " verifies; the newest: " + e.message;
  return e;
}

}  // namespace mlos::checkpoint
