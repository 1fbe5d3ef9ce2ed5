// SPDX-License-Identifier: Apache-2.0
#include "fake_gpu_clock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

namespace mlos::fake {

namespace {

constexpr int kDevices = 16;
constexpr int kRecords = 1 << 15;

struct Record {
  int32_t pid;
  int32_t device;
  int64_t start_ns;
  int64_t end_ns;
};

struct ClockFile {
  int64_t busy_until[kDevices];
  uint64_t next;  // records written so far; the ring keeps the last kRecords
  Record records[kRecords];
};

struct Clock {
  int fd = -1;
  ClockFile* file = nullptr;
};

Clock* clock_file() {
  static Clock* c = [] {
    auto* clock = new Clock;
    const char* path = std::getenv("MLOS_FAKE_GPU_CLOCK");
    if (path == nullptr || *path == '\0') return clock;
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return clock;
    flock(fd, LOCK_EX);
    if (lseek(fd, 0, SEEK_END) < static_cast<off_t>(sizeof(ClockFile))) (void)ftruncate(fd, sizeof(ClockFile));
    flock(fd, LOCK_UN);
    void* p = mmap(nullptr, sizeof(ClockFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return clock;
    }
    clock->fd = fd;
    clock->file = static_cast<ClockFile*>(p);
    return clock;
  }();
  return c;
}

void sleep_until(int64_t when_ns) {
  const int64_t wait = when_ns - monotonic_ns();
  if (wait <= 0) return;
  timespec ts{static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool run_kernel(int device, int pid, int64_t duration_ns) {
  Clock* c = clock_file();
  if (c->file == nullptr || device < 0 || device >= kDevices) return false;
  flock(c->fd, LOCK_EX);
  const int64_t start = std::max(monotonic_ns(), c->file->busy_until[device]);
  c->file->busy_until[device] = start + duration_ns;
  c->file->records[c->file->next % kRecords] = Record{pid, device, start, start + duration_ns};
  ++c->file->next;
  flock(c->fd, LOCK_UN);
  sleep_until(start);
  return true;
}

int64_t last_kernel_end(int device, int pid) {
  Clock* c = clock_file();
  if (c->file == nullptr) return 0;
  flock(c->fd, LOCK_SH);
  int64_t end = 0;
  const uint64_t n = std::min<uint64_t>(c->file->next, kRecords);
  for (uint64_t i = 0; i < n; ++i) {
    const Record& r = c->file->records[i];
    if (r.device == device && r.pid == pid) end = std::max(end, r.end_ns);
  }
  flock(c->fd, LOCK_UN);
  return end;
}

bool busy_by_pid(int device, int64_t from_ns, int64_t to_ns, std::map<int, int64_t>* out) {
  Clock* c = clock_file();
  if (c->file == nullptr) return false;
  flock(c->fd, LOCK_SH);
  const uint64_t n = std::min<uint64_t>(c->file->next, kRecords);
  for (uint64_t i = 0; i < n; ++i) {
    const Record& r = c->file->records[i];
    if (r.device != device) continue;
    const int64_t overlap = std::min(r.end_ns, to_ns) - std::max(r.start_ns, from_ns);
    if (overlap > 0) (*out)[r.pid] += overlap;
  }
  flock(c->fd, LOCK_UN);
  return true;
}

}  // namespace mlos::fake
