// SPDX-License-Identifier: Apache-2.0
#include "gpushare/share_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace mlos::gpushare {

namespace {

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// NUL-terminated within its buffer, printable ASCII: what the job wrote is
// shown by mlos status and exported as a label, so nothing else passes.
std::optional<std::string> clean_text(const char* buf, size_t size) {
  const void* nul = std::memchr(buf, '\0', size);
  if (nul == nullptr) return std::nullopt;
  std::string s(buf, static_cast<const char*>(nul) - buf);
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return std::nullopt;
  }
  return s;
}

}  // namespace

std::string create_share_file(const std::string& path, const ShareLimits& limits, int uid, int gid) {
  if (limits.share_percent < 0 || limits.share_percent > 100) return "compute share must be 0..100 percent";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno_text("cannot create " + path, errno);
  auto layout = std::make_unique<ShareFileLayout>();
  std::memset(layout.get(), 0, sizeof *layout);
  layout->header.magic = kShareFileMagic;
  layout->header.version = kShareFileVersion;
  layout->header.size = sizeof(ShareFileLayout);
  layout->header.share_percent = static_cast<uint32_t>(limits.share_percent);
  layout->header.memory_limit = limits.memory_limit;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&layout->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  std::string why;
  const char* bytes = reinterpret_cast<const char*>(layout.get());
  size_t done = 0;
  while (done < sizeof *layout && why.empty()) {
    const ssize_t n = write(fd, bytes + done, sizeof *layout - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) why = errno_text("cannot write " + path, n < 0 ? errno : EIO);
    else done += static_cast<size_t>(n);
  }
  if (why.empty() && (uid >= 0 || gid >= 0) && fchown(fd, uid, gid) != 0) why = errno_text("cannot chown " + path, errno);
  close(fd);
  if (!why.empty()) unlink(path.c_str());
  return why;
}

std::string untrusted_share_file_reason(const std::string& path, const struct stat& st, uid_t user) {
  const std::string file = "GPU share file " + path;
  const std::string refusal = "; refusing to map it";
  if (!S_ISREG(st.st_mode)) return file + " is not a regular file" + refusal;
  if (st.st_uid != user && st.st_uid != 0) {
    return file + " belongs to uid " + std::to_string(st.st_uid) + ", neither this user nor root" + refusal;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return file + " is writable by group or others" + refusal;
  if (st.st_nlink != 1) return file + " has " + std::to_string(st.st_nlink) + " links (a share file has one)" + refusal;
  if (st.st_size != static_cast<off_t>(sizeof(ShareFileLayout))) {
    return file + " is not a share file of this mlOS (" + std::to_string(st.st_size) + " bytes, not " +
           std::to_string(sizeof(ShareFileLayout)) + ")";
  }
  return "";
}

std::optional<ShareFileView> read_share_file(const std::string& path, std::string* why,
                                             bool (*alive)(int pid, uint64_t start_time), int owner_uid) {
  // mlosd reads as root a path a client named. O_PATH opens nothing (a
  // terminal or FIFO named here is never opened, so never becomes mlosd's
  // controlling terminal nor blocks it); only a regular file of the
  // layout's size, owned by the job's user, is then opened for reading.
  // Whatever else the path names gets one answer, so the reply tells a
  // user nothing of files that are not theirs. That includes no file at
  // all: root resolves paths under directories the user cannot search,
  // where "no such file" beside "not yours" would tell which names exist.
  const std::string refused = path + ": not a GPU share file of the job's user";
  const int probe = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (probe < 0) {
    *why = refused;
    return std::nullopt;
  }
  struct stat st {};
  auto layout = std::make_unique<ShareFileLayout>();
  const bool fits = fstat(probe, &st) == 0 && S_ISREG(st.st_mode) &&
                    st.st_size == static_cast<off_t>(sizeof *layout) &&
                    (owner_uid < 0 || st.st_uid == static_cast<uid_t>(owner_uid));
  int fd = -1;
  if (fits) {
    const std::string self = "/proc/self/fd/" + std::to_string(probe);
    fd = open(self.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  }
  close(probe);
  ssize_t n = -1;
  struct stat again {};
  // The same file as checked (the reopen goes through the descriptor).
  if (fd >= 0 && fstat(fd, &again) == 0 && again.st_ino == st.st_ino && again.st_dev == st.st_dev) {
    n = pread(fd, layout.get(), sizeof *layout, 0);
  }
  if (fd >= 0) close(fd);
  if (n != static_cast<ssize_t>(sizeof *layout)) {
    *why = refused;
    return std::nullopt;
  }
  const ShareHeader& h = layout->header;
  if (h.magic != kShareFileMagic || h.version != kShareFileVersion || h.size != sizeof *layout) {
    *why = path + ": GPU share file of another format (version " + std::to_string(h.version) + ", this mlOS reads " +
           std::to_string(kShareFileVersion) + ")";
    return std::nullopt;
  }
  const auto mechanism = clean_text(h.mechanism, sizeof h.mechanism);
  const auto source = clean_text(h.utilization_source, sizeof h.utilization_source);
  if (h.share_percent > 100 || !mechanism || !source) {
    *why = path + ": GPU share file with invalid header fields";
    return std::nullopt;
  }
  ShareFileView view;
  view.limits.memory_limit = h.memory_limit;
  view.limits.share_percent = static_cast<int>(h.share_percent);
  view.mechanism = *mechanism;
  view.utilization_source = *source;
  std::vector<uint64_t> used(kMaxShareDevices, 0);
  for (const ShareSlot& slot : layout->slots) {
    if (slot.pid <= 0 || !alive(slot.pid, slot.start_time)) continue;
    ++view.processes;
    view.refused += slot.refused;
    view.launches += slot.launches;
    view.throttled_ns += slot.throttled_ns;
    for (int d = 0; d < kMaxShareDevices; ++d) used[d] += slot.used[d];
  }
  for (int d = 0; d < kMaxShareDevices; ++d) {
    const auto uuid = clean_text(layout->devices[d].uuid, kShareUuidSize);
    if (!uuid) {
      *why = path + ": GPU share file with an invalid device entry";
      return std::nullopt;
    }
    if (!uuid->empty()) view.devices.push_back({*uuid, used[d]});
  }
  return view;
}

}  // namespace mlos::gpushare
