/* SPDX-License-Identifier: Apache-2.0 */
// Positional reads through io_uring (liburing): one thread keeps many
// sample reads in flight and waits for whichever finishes first, so decoding
// threads never block on a cold page cache.
//
// Confinement: the ring is created disabled, restricted to IORING_OP_READ
// with no SQE flag but IOSQE_ASYNC and no later registration, then enabled. Work a ring
// does is not seen by seccomp; restricted this way, whoever drives the ring
// can only read from descriptors the process already holds, which its
// seccomp profile allows anyway (read, pread64). Opening files stays a
// plain, filtered openat.
//
// Files that cannot be read without blocking (no FMODE_NOWAIT: FUSE,
// some network file systems) would be read inline by the submitting
// thread, one after another, which is no better than pread: their reads go
// to io_uring's worker threads at once (IOSQE_ASYNC). Local file systems
// read without blocking, completing from the page cache or asynchronously
// from the disk with no worker at all.
//
// Not thread-safe: one thread owns the ring.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"

namespace mlos::dataload {

class UringReads {
 public:
  // One read of `length` bytes at `offset` of `fd` into `data`; the caller
  // owns it and keeps it alive until wait() returns it.
  struct Request {
    int fd = -1;
    uint64_t offset = 0;
    uint8_t* data = nullptr;
    uint64_t length = 0;  // > 0
    uint64_t done = 0;    // bytes read so far
    int error = 0;        // when returned: 0, an errno, or -1 when the file ended first
    void* owner = nullptr;
    bool async = false;   // set by start(): the file blocks inline (blocks_inline)
  };
  // Whether reading `fd` would block the caller rather than say "not
  // yet": preadv2(RWF_NOWAIT) is refused with EOPNOTSUPP. (Where it is
  // not, it may read one byte into a scratch byte, from the page cache.)
  static bool blocks_inline(int fd);

  // A ring for up to `depth` reads at once. MLOS_ERR_UNSUPPORTED saying why
  // when the kernel refuses: io_uring_setup's errno (ENOSYS: no io_uring;
  // EPERM: kernel.io_uring_disabled or a seccomp policy), or restrictions
  // unknown to it (before Linux 5.10).
  static Result<std::unique_ptr<UringReads>> create(unsigned depth);
  ~UringReads();
  UringReads(const UringReads&) = delete;
  UringReads& operator=(const UringReads&) = delete;

  unsigned depth() const { return depth_; }
  unsigned in_flight() const { return in_flight_; }
  // Queues r; requires in_flight() < depth(). Submitted by the next wait().
  void start(Request* r);
  // Submits what is queued and waits until at least one completion comes
  // in; returns the requests that finished (read whole, or failed: see
  // Request::error). Short reads are continued here, so the result may be
  // empty. MLOS_ERR_SYSTEM when io_uring_enter itself fails.
  Result<std::vector<Request*>> wait();
  // Submits one IORING_OP_NOP, waits for it and returns its result:
  // -EACCES while the restriction holds. Requires in_flight() == 0. For
  // tests: the restriction is the ring's security property.
  int probe_nop();

 private:
  explicit UringReads(unsigned depth) : depth_(depth) {}
  void queue(Request* r);

  const unsigned depth_;
  io_uring ring_{};
  bool ring_ready_ = false;
  unsigned in_flight_ = 0;
};

}  // namespace mlos::dataload
