// SPDX-License-Identifier: Apache-2.0
#include "gpushare/job_share.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mlos::gpushare {

uint64_t process_start_time(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name may hold spaces and ')': fields start after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  int field = 2;  // p points at the end of field 2
  for (; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  return field == 22 ? std::strtoull(p, nullptr, 10) : 0;
}

bool process_alive(int pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (start_time == 0) return true;
  const uint64_t now = process_start_time(pid);
  // Unreadable /proc (another user's process under hidepid): trust kill().
  return now == 0 || now == start_time;
}

std::unique_ptr<JobShare> JobShare::attach(const std::string& path, const ShareLimits& fallback, std::string* why) {
  std::unique_ptr<JobShare> share(new JobShare());
  if (path.empty()) {
    void* p = mmap(nullptr, sizeof(ShareFileLayout), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      *why = std::string("cannot map private GPU books: ") + std::strerror(errno);
      return nullptr;
    }
    share->map_ = static_cast<ShareFileLayout*>(p);
    share->map_->header.magic = kShareFileMagic;
    share->map_->header.version = kShareFileVersion;
    share->map_->header.size = sizeof(ShareFileLayout);
    share->map_->header.memory_limit = fallback.memory_limit;
    share->map_->header.share_percent = static_cast<uint32_t>(fallback.share_percent);
    pthread_mutex_init(&share->map_->lock, nullptr);
  } else {
    // O_NONBLOCK | O_NOCTTY: a FIFO or terminal named here is refused
    // below, never waited on nor made the controlling terminal.
    const int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *why = "cannot open GPU share file " + path + ": " + std::strerror(errno);
      return nullptr;
    }
    // Nothing in the file is read before the descriptor proves it ours.
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      *why = "cannot stat GPU share file " + path + ": " + std::strerror(errno);
    } else {
      *why = untrusted_share_file_reason(path, st, geteuid());
    }
    void* p = MAP_FAILED;
    if (why->empty()) {
      p = mmap(nullptr, sizeof(ShareFileLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) *why = "cannot map GPU share file " + path + ": " + std::strerror(errno);
    }
    close(fd);
    if (p == MAP_FAILED) return nullptr;
    share->map_ = static_cast<ShareFileLayout*>(p);
    share->file_backed_ = true;
    const ShareHeader& h = share->map_->header;
    if (h.magic != kShareFileMagic || h.version != kShareFileVersion || h.size != sizeof(ShareFileLayout) ||
        h.share_percent > 100) {
      *why = "GPU share file " + path + " is of another format (version " + std::to_string(h.version) + ")";
      return nullptr;  // the destructor unmaps; no slot was taken
    }
  }
  if (!share->take_slot(why)) return nullptr;
  return share;
}

JobShare::~JobShare() {
  if (map_ == nullptr) return;
  if (slot_ >= 0) {
    lock();
    std::memset(&map_->slots[slot_], 0, sizeof(ShareSlot));
    unlock();
  }
  munmap(map_, sizeof(ShareFileLayout));
}

void JobShare::lock() {
  // A process that died holding the lock left the books as they were
  // after its last complete update (each update is a few stores); they
  // stay usable, so the mutex is marked consistent and used on.
  if (pthread_mutex_lock(&map_->lock) == EOWNERDEAD) pthread_mutex_consistent(&map_->lock);
}

void JobShare::unlock() { pthread_mutex_unlock(&map_->lock); }

void JobShare::reclaim_dead_slots() {
  for (ShareSlot& s : map_->slots) {
    if (s.pid != 0 && !process_alive(s.pid, s.start_time)) std::memset(&s, 0, sizeof s);
  }
}

bool JobShare::take_slot(std::string* why) {
  const int pid = static_cast<int>(getpid());
  const uint64_t start = process_start_time(pid);
  lock();
  int free_slot = -1;
  // A slot of this very process (same pid and start time) was its image
  // before an exec(): the driver freed what that image held, so the slot
  // starts over rather than counting it forever.
  for (int i = 0; i < kMaxShareProcesses && free_slot < 0; ++i) {
    if (map_->slots[i].pid == pid && map_->slots[i].start_time == start) free_slot = i;
  }
  for (int pass = 0; pass < 2 && free_slot < 0; ++pass) {
    if (pass == 1) reclaim_dead_slots();
    for (int i = 0; i < kMaxShareProcesses; ++i) {
      if (map_->slots[i].pid == 0) {
        free_slot = i;
        break;
      }
    }
  }
  if (free_slot >= 0) {
    std::memset(&map_->slots[free_slot], 0, sizeof(ShareSlot));
    map_->slots[free_slot].pid = pid;
    map_->slots[free_slot].start_time = start;
  }
  unlock();
  slot_ = free_slot;
  if (free_slot < 0) {
    *why = "every slot of the GPU share file is held by a live process (" + std::to_string(kMaxShareProcesses) +
           " processes)";
    return false;
  }
  return true;
}

void JobShare::reattach_after_fork() {
  slot_ = -1;
  slot_wanted_ = true;  // taken on the child's first allocation or launch
  if (!file_backed_) {
    // Private books are the child's own copy: the lock may have been held
    // by a parent thread that does not exist here, and nothing the parent
    // allocated is the child's (CUDA state does not survive fork()).
    pthread_mutex_init(&map_->lock, nullptr);
    std::memset(map_->slots, 0, sizeof map_->slots);
  }
}

bool JobShare::ensure_slot() {
  if (slot_ >= 0) return true;
  if (!slot_wanted_) return false;
  slot_wanted_ = false;
  std::string why;
  if (!take_slot(&why)) why_ = why;
  return slot_ >= 0;
}

ShareLimits JobShare::limits() const {
  return {map_->header.memory_limit, static_cast<int>(map_->header.share_percent)};
}

int JobShare::device(const std::string& uuid) {
  if (uuid.empty() || uuid.size() >= kShareUuidSize) return -1;
  lock();
  int found = -1;
  for (int d = 0; d < kMaxShareDevices && found < 0; ++d) {
    char* entry = map_->devices[d].uuid;
    if (entry[0] == '\0') {
      std::memcpy(entry, uuid.c_str(), uuid.size() + 1);
      found = d;
    } else if (uuid == entry) {
      found = d;
    }
  }
  unlock();
  if (found < 0) why_ = "more than " + std::to_string(kMaxShareDevices) + " GPUs: " + uuid + " is not capped";
  return found;
}

uint64_t JobShare::job_used(int device) {
  if (device < 0 || device >= kMaxShareDevices) return 0;
  lock();
  uint64_t sum = 0;
  for (const ShareSlot& s : map_->slots) {
    if (s.pid != 0) sum += s.used[device];
  }
  unlock();
  return sum;
}

bool JobShare::reserve(int device, uint64_t bytes) {
  if (device < 0 || device >= kMaxShareDevices) return true;
  if (!ensure_slot()) return false;  // every slot held: the cap cannot be kept, so nothing is allocated
  const uint64_t limit = map_->header.memory_limit;
  lock();
  bool ok = true;
  if (limit != 0) {
    for (int pass = 0; pass < 2; ++pass) {
      uint64_t sum = 0;
      for (const ShareSlot& s : map_->slots) {
        if (s.pid != 0) sum += s.used[device];
      }
      ok = sum <= limit && bytes <= limit - sum;
      if (ok || pass == 1 || !file_backed_) break;
      reclaim_dead_slots();  // only when refusing: it reads /proc per slot
    }
  }
  if (ok) {
    map_->slots[slot_].used[device] += bytes;
  } else {
    ++map_->slots[slot_].refused;
  }
  unlock();
  return ok;
}

void JobShare::release(int device, uint64_t bytes) {
  if (device < 0 || device >= kMaxShareDevices || slot_ < 0) return;
  lock();
  uint64_t& used = map_->slots[slot_].used[device];
  used = used > bytes ? used - bytes : 0;
  unlock();
}

std::vector<int> JobShare::job_pids() {
  std::vector<int> pids;
  lock();
  for (const ShareSlot& s : map_->slots) {
    if (s.pid != 0) pids.push_back(s.pid);
  }
  unlock();
  return pids;
}

void JobShare::count_launch() {
  if (ensure_slot()) __atomic_add_fetch(&map_->slots[slot_].launches, 1, __ATOMIC_RELAXED);
}

void JobShare::add_throttled_ns(uint64_t ns) {
  if (ensure_slot()) __atomic_add_fetch(&map_->slots[slot_].throttled_ns, ns, __ATOMIC_RELAXED);
}

void JobShare::set_mechanism(const std::string& mechanism, const std::string& utilization_source) {
  lock();
  std::snprintf(map_->header.mechanism, sizeof map_->header.mechanism, "%s", mechanism.c_str());
  std::snprintf(map_->header.utilization_source, sizeof map_->header.utilization_source, "%s",
                utilization_source.c_str());
  unlock();
}

}  // namespace mlos::gpushare
