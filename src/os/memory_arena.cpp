// SPDX-License-Identifier: Apache-2.0
#include "os/memory_arena.h"

#include <fcntl.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace mlos::os {

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = 2u << 20;
constexpr int kMaxNodeBits = 1024;
// MFD_HUGE_2MB (linux/memfd.h, whose other macros clash with glibc's):
// log2(2 MiB) << MFD_HUGE_SHIFT.
constexpr unsigned kMfdHuge2Mb = 21u << 26;
constexpr const char* kThpRoot = "/sys/kernel/mm/transparent_hugepage";

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// The word in [brackets] of a sysfs choice file ("always [madvise] never").
std::string selected_word(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "";
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return line.substr(open + 1, close - open - 1);
}

uint64_t meminfo_field(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    if (name == key + ":") return value;
    in.ignore(256, '\n');
  }
  return 0;
}

// Maps `size` bytes at a 2 MiB-aligned address: reserves size + 2 MiB of
// address space, maps over its aligned middle and returns the slack.
Result<char*> map_aligned(uint64_t size, int fd, int flags) {
  void* reserve = mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserve == MAP_FAILED) {
    return make_sys_error(errno, "reserving " + std::to_string(size) + " bytes of address space", MLOS_ERR_NO_MEMORY);
  }
  const auto start = reinterpret_cast<uintptr_t>(reserve);
  const uintptr_t aligned = round_up(start, kHugePage);
  void* p = mmap(reinterpret_cast<void*>(aligned), size, PROT_READ | PROT_WRITE, flags | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    munmap(reserve, size + kHugePage);
    return make_sys_error(err, "mapping the arena (" + std::to_string(size) + " bytes)", MLOS_ERR_NO_MEMORY);
  }
  if (aligned > start) munmap(reserve, aligned - start);
  const uintptr_t end = start + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  return reinterpret_cast<char*>(p);
}

std::vector<unsigned long> node_mask(const CpuSet& nodes) {
  std::vector<unsigned long> mask(kMaxNodeBits / (8 * sizeof(unsigned long)), 0);
  for (int n : nodes.to_vector()) {
    if (n < kMaxNodeBits) mask[n / (8 * sizeof(unsigned long))] |= 1ul << (n % (8 * sizeof(unsigned long)));
  }
  return mask;
}

}  // namespace

std::string transparent_huge_setting(const std::string& sysfs_root, bool shmem) {
  const char* file = shmem ? "shmem_enabled" : "enabled";
  const std::string per_size = selected_word(sysfs_root + "/hugepages-2048kB/" + file);
  if (!per_size.empty() && per_size != "inherit") return per_size;
  return selected_word(sysfs_root + "/" + file);
}

bool transparent_huge_advisable(const std::string& setting, bool shmem) {
  if (shmem) return setting == "always" || setting == "within_size" || setting == "advise" || setting == "force";
  return setting == "always" || setting == "madvise";
}

Result<MemoryArena> MemoryArena::create(const ArenaOptions& options) {
  MemoryArena arena;
  arena.hugetlb_ = options.hugetlb && options.shareable;
  arena.size_ = round_up(std::max<uint64_t>(options.size, 1), arena.hugetlb_ ? kHugePage : kPage);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (options.shareable) {
    const std::string name = "mlos-tmm:" + options.name;
    unsigned mfd = MFD_CLOEXEC | MFD_ALLOW_SEALING;
    if (arena.hugetlb_) mfd |= MFD_HUGETLB | kMfdHuge2Mb;
    arena.fd_.reset(memfd_create(name.c_str(), mfd));
    if (!arena.fd_.valid()) {
      const int err = errno;
      if (arena.hugetlb_) return make_sys_error(err, "memfd_create(MFD_HUGETLB)", MLOS_ERR_UNSUPPORTED);
      return make_sys_error(err, "memfd_create");
    }
    if (ftruncate(arena.fd_.get(), static_cast<off_t>(arena.size_)) != 0) {
      return make_sys_error(errno, "sizing the arena to " + std::to_string(arena.size_) + " bytes", MLOS_ERR_NO_MEMORY);
    }
    if (fcntl(arena.fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      return make_sys_error(errno, "sealing the arena");
    }
    flags = MAP_SHARED;
  }
  auto base = map_aligned(arena.size_, arena.fd_.get(), flags);
  if (!base) {
    if (!arena.hugetlb_) return base.error();
    const uint64_t free_pages = meminfo_field("HugePages_Free");
    return make_error(MLOS_ERR_UNSUPPORTED,
                      "hugetlbfs: " + std::to_string(arena.size_ / kHugePage) + " huge pages of 2 MiB needed, " +
                          std::to_string(free_pages) + " free (HugePages_Free; reserve more in /proc/sys/vm/nr_hugepages)");
  }
  arena.base_ = *base;
  if (options.transparent_huge && !arena.hugetlb_) {
    const bool shmem = options.shareable;
    const std::string setting = transparent_huge_setting(kThpRoot, shmem);
    if (!transparent_huge_advisable(setting, shmem)) {
      arena.huge_page_note_ = std::string(shmem ? "shmem" : "anonymous") + " transparent huge pages are \"" +
                              setting + "\" here (" + kThpRoot + (shmem ? "/shmem_enabled" : "/enabled") + ")" +
                              (shmem ? "; a MLOS_TMM_PRIVATE pool can use the anonymous setting" : "");
    } else if (madvise(arena.base_, arena.size_, MADV_HUGEPAGE) != 0) {
      arena.huge_page_note_ = "madvise(MADV_HUGEPAGE) failed: " + std::string(strerror(errno));
    }
  }
  return arena;
}

Result<MemoryArena> MemoryArena::map_descriptor(int fd) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return make_sys_error(errno, "descriptor " + std::to_string(fd) + " is not a memfd arena", MLOS_ERR_INVALID_ARGUMENT);
  }
  if (!(seals & F_SEAL_SHRINK)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "descriptor " + std::to_string(fd) +
                                                     " is not sealed against shrinking: its owner could truncate it "
                                                     "under the mapping");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return make_sys_error(errno, "fstat of the arena", MLOS_ERR_INVALID_ARGUMENT);
  if (st.st_size <= 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "the arena is empty");
  MemoryArena arena;
  arena.size_ = static_cast<uint64_t>(st.st_size);
  arena.fd_.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!arena.fd_.valid()) return make_sys_error(errno, "dup of the arena descriptor");
  auto base = map_aligned(arena.size_, arena.fd_.get(), MAP_SHARED);
  if (!base) return base.error();
  arena.base_ = *base;
  return arena;
}

MemoryArena::MemoryArena(MemoryArena&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::move(other.fd_)),
      hugetlb_(other.hugetlb_),
      huge_page_note_(std::move(other.huge_page_note_)) {}

MemoryArena& MemoryArena::operator=(MemoryArena&& other) noexcept {
  if (this != &other) {
    unmap();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::move(other.fd_);
    hugetlb_ = other.hugetlb_;
    huge_page_note_ = std::move(other.huge_page_note_);
  }
  return *this;
}

MemoryArena::~MemoryArena() { unmap(); }

void MemoryArena::unmap() {
  if (base_) munmap(base_, size_);
  base_ = nullptr;
}

Status MemoryArena::bind(const MemoryPolicy& policy) {
  const auto mask = node_mask(policy.nodes);
  const bool no_nodes = policy.mode == MPOL_DEFAULT || policy.nodes.empty();
  if (syscall(SYS_mbind, base_, size_, policy.mode, no_nodes ? nullptr : mask.data(),
              no_nodes ? 0 : kMaxNodeBits + 1, 0) != 0) {
    const int err = errno;
    return make_sys_error(err, "mbind of the arena to nodes " + policy.nodes.to_list(),
                          err == EINVAL ? MLOS_ERR_INVALID_NUMA_NODE : MLOS_ERR_SYSTEM);
  }
  return Status::Ok();
}

Status MemoryArena::lock(uint64_t offset, uint64_t bytes) {
  if (mlock(base_ + offset, bytes) != 0) {
    const int err = errno;
    return make_sys_error(err, "mlock of " + std::to_string(bytes) + " arena bytes",
                          err == EPERM || err == ENOMEM || err == EAGAIN ? MLOS_ERR_LOCK_LIMIT : MLOS_ERR_SYSTEM);
  }
  return Status::Ok();
}

Status MemoryArena::unlock(uint64_t offset, uint64_t bytes) {
  if (munlock(base_ + offset, bytes) != 0) return make_sys_error(errno, "munlock of arena bytes");
  return Status::Ok();
}

Status MemoryArena::populate(uint64_t offset, uint64_t bytes) {
  if (madvise(base_ + offset, bytes, MADV_POPULATE_WRITE) == 0) return Status::Ok();
  if (errno != EINVAL) {
    return make_sys_error(errno, "prefaulting " + std::to_string(bytes) + " arena bytes", MLOS_ERR_NO_MEMORY);
  }
  // Before Linux 5.14: one write per page.
  const uint64_t step = hugetlb_ ? kHugePage : kPage;
  for (uint64_t at = 0; at < bytes; at += step) static_cast<volatile char*>(base_ + offset)[at] = 0;
  return Status::Ok();
}

Status MemoryArena::punch(uint64_t offset, uint64_t bytes) {
  if (fd_.valid()) {
    if (fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(bytes)) != 0) {
      return make_sys_error(errno, "punching " + std::to_string(bytes) + " bytes out of the arena");
    }
    return Status::Ok();
  }
  if (madvise(base_ + offset, bytes, MADV_DONTNEED) != 0) return make_sys_error(errno, "madvise(MADV_DONTNEED)");
  return Status::Ok();
}

uint64_t MemoryArena::resident_bytes() const {
  if (fd_.valid()) {
    struct stat st {};
    if (fstat(fd_.get(), &st) != 0) return 0;
    return std::min<uint64_t>(static_cast<uint64_t>(st.st_blocks) * 512, size_);
  }
  std::vector<unsigned char> present(size_ / kPage);
  if (mincore(base_, size_, present.data()) != 0) return 0;
  return static_cast<uint64_t>(std::count_if(present.begin(), present.end(), [](unsigned char c) { return c & 1; })) *
         kPage;
}

uint64_t MemoryArena::huge_bytes() const {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool ours = false;
  uint64_t kib = 0;
  const auto start = reinterpret_cast<uintptr_t>(base_);
  while (std::getline(in, line)) {
    // A mapping's first line: "start-end perms offset dev inode [path]".
    const auto dash = line.find('-');
    if (dash != std::string::npos && dash > 0 && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find(' ') > dash) {
      ours = std::stoull(line.substr(0, dash), nullptr, 16) == start;
      continue;
    }
    if (!ours) continue;
    std::istringstream fields(line);
    std::string key;
    uint64_t value = 0;
    fields >> key >> value;
    if (key == "AnonHugePages:" || key == "ShmemPmdMapped:" || key == "FilePmdMapped:" ||
        key == "Shared_Hugetlb:" || key == "Private_Hugetlb:") {
      kib += value;
    }
  }
  return kib * 1024;
}

Result<uint64_t> MemoryArena::pages_off_nodes(const CpuSet& nodes, uint64_t offset, uint64_t bytes) const {
  constexpr size_t kBatch = 1024;
  const uint64_t step = hugetlb_ ? kHugePage : kPage;
  std::vector<void*> pages;
  std::vector<int> status(kBatch);
  uint64_t off_node = 0;
  for (uint64_t at = offset; at < offset + bytes;) {
    pages.clear();
    for (; at < offset + bytes && pages.size() < kBatch; at += step) pages.push_back(base_ + at);
    if (syscall(SYS_move_pages, 0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) {
      return make_sys_error(errno, "move_pages (query) over the arena");
    }
    for (size_t i = 0; i < pages.size(); ++i) {
      if (status[i] >= 0 && !nodes.test(status[i])) ++off_node;  // negative: not present
    }
  }
  return off_node;
}

}  // namespace mlos::os
