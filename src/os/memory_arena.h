/* SPDX-License-Identifier: Apache-2.0 */
// A tensor pool's arena: one mapping of a memfd (shareable by descriptor)
// or of private anonymous memory, and every kernel call made on it: NUMA
// binding, locking, prefaulting, punching pages out, and the facts that
// show what the kernel actually did (resident, huge and off-node pages).
//
// The mapping starts on a 2 MiB boundary, so buffers carved at 2 MiB
// offsets can be backed by huge pages. A shareable arena is sealed against
// shrinking and growing once sized: a process it is passed to can neither
// truncate it under its owner (SIGBUS) nor be surprised by the owner.
#pragma once

#include <cstdint>
#include <string>

#include "core/cpu_set.h"
#include "core/status.h"
#include "os/kernel.h"
#include "os/unique_fd.h"

namespace mlos::os {

struct ArenaOptions {
  uint64_t size = 0;          // rounded up to a page (2 MiB with hugetlb)
  bool shareable = true;      // a memfd; else private anonymous memory
  bool hugetlb = false;       // MFD_HUGETLB, 2 MiB pages (shareable only)
  bool transparent_huge = false;  // madvise(MADV_HUGEPAGE)
  std::string name;           // memfd name suffix: "mlos-tmm:<name>"
};

class MemoryArena {
 public:
  // UNSUPPORTED when hugetlb pages are too few (the message gives
  // HugePages_Free and the pages needed); NO_MEMORY when the mapping fails.
  static Result<MemoryArena> create(const ArenaOptions& options);
  // Maps an arena received from another process. INVALID_ARGUMENT unless
  // `fd` is a memfd sealed against shrinking.
  static Result<MemoryArena> map_descriptor(int fd);

  MemoryArena(MemoryArena&& other) noexcept;
  MemoryArena& operator=(MemoryArena&& other) noexcept;
  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;
  ~MemoryArena();

  char* base() const { return base_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_.get(); }  // -1 for private memory
  bool hugetlb() const { return hugetlb_; }
  // Set when transparent huge pages were asked for and the kernel's
  // settings rule them out: why. Empty otherwise.
  const std::string& huge_page_note() const { return huge_page_note_; }

  // mbind(2) over the whole arena; pages already present are not moved.
  Status bind(const MemoryPolicy& policy);
  Status lock(uint64_t offset, uint64_t bytes);
  Status unlock(uint64_t offset, uint64_t bytes);
  // Faults the pages in for writing (MADV_POPULATE_WRITE, or one write per
  // page on kernels before 5.14): their contents become unspecified.
  Status populate(uint64_t offset, uint64_t bytes);
  // Gives the pages back to the kernel; they read as zeros afterwards.
  Status punch(uint64_t offset, uint64_t bytes);

  uint64_t resident_bytes() const;
  // Bytes mapped with huge pages (THP or hugetlbfs), from /proc/self/smaps.
  uint64_t huge_bytes() const;
  // Resident pages of [offset, offset + bytes) on a node outside `nodes`
  // (move_pages(2) with no target: it only reports).
  Result<uint64_t> pages_off_nodes(const CpuSet& nodes, uint64_t offset, uint64_t bytes) const;

 private:
  MemoryArena() = default;
  void unmap();

  char* base_ = nullptr;
  uint64_t size_ = 0;
  UniqueFd fd_;
  bool hugetlb_ = false;
  std::string huge_page_note_;
};

// The transparent-huge-page setting in force for 2 MiB pages of anonymous
// (shmem false) or shmem memory: the per-size setting unless it says
// "inherit", else the global one ("madvise", "never", ...). `sysfs_root`
// is /sys/kernel/mm/transparent_hugepage in production, a fixture in tests.
std::string transparent_huge_setting(const std::string& sysfs_root, bool shmem);
// Whether madvise(MADV_HUGEPAGE) can get huge pages under `setting`.
bool transparent_huge_advisable(const std::string& setting, bool shmem);

}  // namespace mlos::os
