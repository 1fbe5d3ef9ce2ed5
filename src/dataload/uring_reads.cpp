// SPDX-License-Identifier: Apache-2.0
#include "dataload/uring_reads.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace mlos::dataload {

Result<std::unique_ptr<UringReads>> UringReads::create(unsigned depth) {
  if (depth == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "io_uring depth must be > 0");
  std::unique_ptr<UringReads> reads(new UringReads(depth));
  io_uring_params params{};
  params.flags = IORING_SETUP_R_DISABLED;  // restricted before anything can run on it
  if (int rc = io_uring_queue_init_params(depth, &reads->ring_, &params); rc < 0) {
    return make_sys_error(-rc, "io_uring_setup", MLOS_ERR_UNSUPPORTED);
  }
  reads->ring_ready_ = true;
  // Up to `depth` of its worker threads may read at once (the kernel's
  // default is 4 per CPU): a file that blocks inline waits in one of them.
  // Advice: a kernel without the call keeps its default.
  unsigned workers[2] = {depth, 0};  // bounded (file reads), unbounded unchanged
  (void)io_uring_register_iowq_max_workers(&reads->ring_, workers);
  io_uring_restriction only_reads[2]{};
  only_reads[0].opcode = IORING_RESTRICTION_SQE_OP;
  only_reads[0].sqe_op = IORING_OP_READ;
  only_reads[1].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
  only_reads[1].sqe_flags = IOSQE_ASYNC;
  // Through io_uring_register: Debian 12's liburing 2.3 declares
  // io_uring_register_restrictions and io_uring_enable_rings but does not
  // export them (fixed in 2.4).
  const auto fd = static_cast<unsigned>(reads->ring_.ring_fd);
  if (int rc = io_uring_register(fd, IORING_REGISTER_RESTRICTIONS, only_reads, 2); rc < 0) {
    return make_sys_error(-rc, "restricting the io_uring ring to reads", MLOS_ERR_UNSUPPORTED);
  }
  if (int rc = io_uring_register(fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0); rc < 0) {
    return make_sys_error(-rc, "enabling the io_uring ring", MLOS_ERR_UNSUPPORTED);
  }
  return reads;
}

UringReads::~UringReads() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
}

bool UringReads::blocks_inline(int fd) {
  // RWF_NOWAIT is refused (EOPNOTSUPP) on a file without FMODE_NOWAIT;
  // otherwise one byte is read (cached) or EAGAIN comes back (not yet).
  uint8_t byte;
  iovec one{&byte, 1};
  return ::preadv2(fd, &one, 1, 0, RWF_NOWAIT) < 0 && errno == EOPNOTSUPP;
}

void UringReads::start(Request* r) {
  r->done = 0;
  r->error = 0;
  r->async = blocks_inline(r->fd);
  ++in_flight_;
  queue(r);
}

void UringReads::queue(Request* r) {
  // in_flight_ <= depth_ <= the submission queue's entries, and wait()
  // submits everything before reaping, so there is always an entry.
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  const auto chunk = static_cast<unsigned>(std::min<uint64_t>(r->length - r->done, INT_MAX));
  io_uring_prep_read(sqe, r->fd, r->data + r->done, chunk, r->offset + r->done);
  io_uring_sqe_set_data(sqe, r);
  if (r->async) sqe->flags |= IOSQE_ASYNC;
}

Result<std::vector<UringReads::Request*>> UringReads::wait() {
  int rc;
  do {
    rc = io_uring_submit_and_wait(&ring_, 1);
  } while (rc == -EINTR);
  if (rc < 0) return make_sys_error(-rc, "io_uring_enter");
  std::vector<Request*> finished;
  io_uring_cqe* cqe = nullptr;
  unsigned head = 0;
  unsigned seen = 0;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    ++seen;
    auto* r = static_cast<Request*>(io_uring_cqe_get_data(cqe));
    const int res = cqe->res;
    if (res == -EINTR || res == -EAGAIN) {
      queue(r);  // try the same bytes again
    } else if (res < 0) {
      r->error = -res;
    } else if (res == 0) {
      r->error = -1;  // the file ends before the extent does
    } else {
      r->done += static_cast<uint64_t>(res);
      if (r->done < r->length) queue(r);
    }
    if (r->error != 0 || r->done == r->length) finished.push_back(r);
  }
  io_uring_cq_advance(&ring_, seen);
  in_flight_ -= static_cast<unsigned>(finished.size());
  return finished;
}

int UringReads::probe_nop() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  io_uring_prep_nop(sqe);
  io_uring_sqe_set_data(sqe, nullptr);
  int rc = io_uring_submit_and_wait(&ring_, 1);
  // A refused opcode can fail the submission itself rather than post a
  // completion, depending on the kernel.
  if (rc < 0) return rc;
  io_uring_cqe* cqe = nullptr;
  if ((rc = io_uring_wait_cqe(&ring_, &cqe)) < 0) return rc;
  const int res = cqe->res;
  io_uring_cqe_seen(&ring_, cqe);
  return res;
}

}  // namespace mlos::dataload
